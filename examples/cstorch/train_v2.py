"""A training script written for the later releases' API (`import cerebras.pytorch as cstorch`):
train with checkpoint closures and TensorBoard summaries, then validate in the same process.

    python -m csadmin.cstorch examples/cstorch/train_v2.py --out-dir out            # on csd's system
    python -m csadmin.cstorch examples/cstorch/train_v2.py --out-dir out --backend CPU   # no system

csd comes from $CS_CONNECT / $CS_KEY (or --mgmt-address / --key); the system must be ACTIVE in
weight streaming. Two DataExecutors, two runs on the system: training (checkpoints
<out-dir>/checkpoint_<step>.mdl on the checkpoint steps and the last; the loss in
<out-dir>/train/ for TensorBoard), then validation of the trained weights (accuracy and loss in
<out-dir>/eval/). Each run's own files (performance.json, the compile directory's link, the run's
yaml) are in <out-dir>/executors/<NNNNNN>/. `--checkpoint FILE` resumes training from one.
"""

import argparse
import logging
import os
import sys

import torch

try:  # under `python -m csadmin.cstorch` the real package's name is there
    import cerebras.pytorch as cstorch
except ImportError:
    import csadmin.cstorch as cstorch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import build_model, input_fn  # noqa: E402

logging.basicConfig(level=logging.INFO, format="%(message)s")
logger = logging.getLogger("train_v2")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out-dir", default="out")
    p.add_argument("--backend", default="CSX", choices=["CSX", "CPU", "GPU"])
    p.add_argument("--mgmt-address", help="csd's connection file or endpoint (default: $CS_CONNECT)")
    p.add_argument("--key", help="your secret key file (default: $CS_KEY)")
    p.add_argument("--num-steps", type=int, default=60, help="the training's total steps (resumed runs included)")
    p.add_argument("--checkpoint-steps", type=int, default=20)
    p.add_argument("--eval-steps", type=int, default=16)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--learning-rate", type=float, default=0.05)
    p.add_argument("--checkpoint", dest="checkpoint_path", help="resume from this checkpoint")
    only = p.add_mutually_exclusive_group()
    only.add_argument("--compile-only", action="store_true")
    only.add_argument("--validate-only", action="store_true")
    return p.parse_args()


def main(args):
    out_dir = args.out_dir
    if args.backend == "CSX":
        cluster_config = cstorch.distributed.ClusterConfig(mgmt_address=args.mgmt_address,
                                                           credentials_path=args.key)
        backend = cstorch.backend("CSX", artifact_dir=out_dir, compile_dir=os.path.join(out_dir, "compile"),
                                  compile_only=args.compile_only, validate_only=args.validate_only,
                                  cluster_config=cluster_config)
    else:
        backend = cstorch.backend(args.backend, artifact_dir=out_dir)

    with backend.device:
        model = build_model()
    compiled_model = cstorch.compile(model, backend)

    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = cstorch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)
    warmup = 10
    lr_scheduler = cstorch.optim.lr_scheduler.SequentialLR(
        optimizer,
        schedulers=[
            cstorch.optim.lr_scheduler.LinearLR(optimizer, initial_learning_rate=0.01,
                                                end_learning_rate=args.learning_rate, total_iters=warmup),
            cstorch.optim.lr_scheduler.CosineDecayLR(optimizer, initial_learning_rate=args.learning_rate,
                                                     end_learning_rate=0.1 * args.learning_rate,
                                                     total_iters=max(1, args.num_steps - warmup)),
        ],
        milestones=[warmup],
    )

    global_step = 0
    if args.checkpoint_path is not None:
        state_dict = cstorch.load(args.checkpoint_path)
        model.load_state_dict(state_dict["model"])
        optimizer.load_state_dict(state_dict["optimizer"])
        lr_scheduler.load_state_dict(state_dict["lr_scheduler"])
        global_step = state_dict.get("global_step", 0)
        logger.info(f"resumed from {args.checkpoint_path} at step {global_step}")

    @cstorch.checkpoint_closure
    def save_checkpoint(step):
        checkpoint_path = os.path.join(out_dir, f"checkpoint_{step}.mdl")
        state_dict = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "lr_scheduler": lr_scheduler.state_dict(),
            "global_step": step,
        }
        cstorch.save(state_dict, checkpoint_path)
        logger.info(f"saved {checkpoint_path}")

    @cstorch.trace
    def training_step(batch):
        inputs, targets = batch
        loss = loss_fn(compiled_model(inputs), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        return loss

    writer = cstorch.utils.tensorboard.SummaryWriter(log_dir=os.path.join(out_dir, "train"))

    @cstorch.step_closure
    def log_loss(loss, step):
        writer.add_scalar("loss", loss.item(), step)
        if step % 10 == 0 or step == global_step + 1:
            logger.info(f"| Step={step}, Loss={loss.item():.5f}, Rate={executor.profiler.rate():.1f} samples/sec")

    dataloader = cstorch.utils.data.DataLoader(input_fn, batch_size=args.batch_size, start=global_step)
    executor = cstorch.utils.data.DataExecutor(
        dataloader,
        num_steps=args.num_steps - global_step,
        checkpoint_steps=args.checkpoint_steps,
        writer=writer,
    )
    for step, batch in enumerate(executor, start=global_step + 1):
        loss = training_step(batch)
        log_loss(loss, step)
        save_checkpoint(step)
    writer.close()

    # Validation, in the same process: a second DataExecutor, a second run with the eval program.
    compiled_model.eval()
    accuracy = cstorch.metrics.AccuracyMetric("accuracy")
    eval_writer = cstorch.utils.tensorboard.SummaryWriter(log_dir=os.path.join(out_dir, "eval"))
    losses = []

    @cstorch.trace
    def eval_step(batch):
        inputs, targets = batch
        outputs = compiled_model(inputs)
        accuracy(labels=targets.clone(), predictions=outputs.argmax(-1).int())
        return loss_fn(outputs, targets)

    @cstorch.step_closure
    def post_eval_step(loss):
        losses.append(loss.item())

    eval_dataloader = cstorch.utils.data.DataLoader(input_fn, batch_size=args.batch_size, seed=1)  # held out
    eval_executor = cstorch.utils.data.DataExecutor(eval_dataloader, num_steps=args.eval_steps, writer=eval_writer)
    with torch.no_grad():
        for batch in eval_executor:
            post_eval_step(eval_step(batch))

    if losses:
        eval_loss, eval_accuracy = sum(losses) / len(losses), float(accuracy)
        eval_writer.add_scalar("loss", eval_loss, args.num_steps)
        eval_writer.add_scalar("accuracy", eval_accuracy, args.num_steps)
        logger.info(f"| Eval Loss={eval_loss:.5f}, Eval Accuracy={eval_accuracy}")
    eval_writer.close()
    logger.info(f"runs: {os.path.join(out_dir, 'executors')}")


if __name__ == "__main__":
    main(parse_args())
