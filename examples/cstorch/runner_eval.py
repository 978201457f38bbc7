"""Evaluation written the way R1.8 users write it: no compiled_model.eval() (the run's mode follows
the step, which has no backward), the loop under torch.no_grad(), the metrics read once at the
end with float(accuracy) and compute_all_metrics().

    python -m csadmin.cstorch examples/cstorch/runner_eval.py --checkpoint out/checkpoint_40.mdl

Evaluates a checkpoint of runner_train.py on held-out data; the metrics go to stdout and to
TensorBoard in <model-dir>/eval at the checkpoint's step. With --check it also prints the accuracy
plain PyTorch computes on the same batches with the system's numerics (float16 compute, 001).
"""

import argparse
import os
import sys

import torch
from torch.utils.tensorboard import SummaryWriter

try:  # the real API's names, under `python -m csadmin.cstorch`
    import cerebras_pytorch.experimental as cstorch
    import cerebras_pytorch.experimental.metrics as metrics
except ImportError:
    import csadmin.cstorch as cstorch
    import csadmin.cstorch.metrics as metrics

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import dataset  # noqa: E402
from runner_train import Classifier  # noqa: E402


def eval_input_fn(params):
    p = params["eval_input"]
    inputs, labels = dataset(p["samples"], seed=p["data_seed"])
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, labels),
                                       batch_size=p["batch_size"], shuffle=False, drop_last=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--model-dir", default="eval_dir")
    p.add_argument("--check", action="store_true", help="also compute the accuracy in plain PyTorch")
    args = p.parse_args()
    params = {
        "model": {"hidden_size": 64},
        "eval_input": {"samples": 512, "batch_size": 32, "data_seed": 7},  # another seed than training's
    }

    cstorch.configure(model_dir=args.model_dir, compile_dir=os.path.join(args.model_dir, "compile"))

    model = Classifier(params["model"]["hidden_size"])
    compiled_model = cstorch.compile(model, backend="WSE_WS")
    loss_fn = torch.nn.CrossEntropyLoss()

    state_dict = cstorch.load(args.checkpoint)
    model.load_state_dict(state_dict["model"])
    global_step = state_dict.get("global_step", 0)

    accuracy = metrics.AccuracyMetric("eval/accuracy", compute_on_system=True)
    perplexity = metrics.PerplexityMetric("eval/perplexity", compute_on_system=True)
    writer = SummaryWriter(log_dir=os.path.join(args.model_dir, "eval"))

    @cstorch.compile_step
    def eval_step(batch):
        inputs, labels = batch
        outputs = compiled_model(inputs)
        loss = loss_fn(outputs, labels)
        accuracy(labels=labels.clone(), predictions=outputs.argmax(-1).int())
        perplexity(labels=labels.clone(), loss=loss * labels.numel())  # the metric adds the batch's total loss
        return loss

    total_loss = 0.0
    total_steps = 0

    @cstorch.step_closure
    def post_eval_step(loss):
        nonlocal total_loss, total_steps
        total_loss += loss.item()
        total_steps += 1

    dataloader = cstorch.utils.data.DataLoader(eval_input_fn, params)
    with torch.no_grad():
        for _epoch in range(dataloader.num_epochs):
            for batch in dataloader:
                loss = eval_step(batch)
                post_eval_step(loss)

    print(f"Eval Accuracy: {float(accuracy)}")
    for name, value in metrics.compute_all_metrics():
        writer.add_scalar(name, value, global_step)
        print(f"Metric: {name} = {value}")
    writer.add_scalar("eval/loss", total_loss / total_steps, global_step)
    writer.close()
    print(f"Avg Eval Loss: {total_loss / total_steps:.6f} over {total_steps} steps "
          f"({len(dataloader.dataset)} samples) on {compiled_model.backend.name}")

    if args.check:  # the same weights and batches without cstorch, with the system's numerics
        plain = Classifier(params["model"]["hidden_size"])
        plain.load_state_dict(state_dict["model"])
        correct = seen = 0
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.float16):
            for inputs, labels in eval_input_fn(params):
                correct += (plain(inputs).argmax(-1) == labels).sum().item()
                seen += len(labels)
        print(f"Plain PyTorch Accuracy: {correct / seen}")


if __name__ == "__main__":
    main()
