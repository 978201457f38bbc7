"""Training written the way R1.8 users write it: a params dictionary, configure with the runner's
keywords, the optimizer and schedule from the configuration, summaries, a logging closure,
checkpoints, and a resume that continues the step count and the data.

    python -m csadmin.cstorch examples/cstorch/runner_train.py --model-dir out --max-steps 40
    python examples/cstorch/runner_train.py --model-dir out --max-steps 80 --checkpoint out/checkpoint_40.mdl

csd comes from $CS_CONNECT / $CS_KEY. The log (stderr) says what each step did; TensorBoard's
files are in <model-dir>/train (loss, params_norm and lr.0 at every step), the checkpoints in
<model-dir>/checkpoint_<step>.mdl.
"""

import argparse
import logging
import os
import sys

import torch
from torch.utils.tensorboard import SummaryWriter

try:  # the real API's names, under `python -m csadmin.cstorch`
    import cerebras_pytorch.experimental as cstorch
    from cerebras_appliance.pb.workflow.appliance.common.common_config_pb2 import ExecutionStrategy
    from cerebras_appliance.run_utils import get_debug_args
except ImportError:
    import csadmin.cstorch as cstorch
    from csadmin.cstorch.backend.appliance import ExecutionStrategy, get_debug_args

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from data import CLASSES, FEATURES, dataset  # noqa: E402


class Classifier(torch.nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.body = torch.nn.Sequential(torch.nn.Linear(FEATURES, hidden), torch.nn.GELU())
        self.head = torch.nn.Linear(hidden, CLASSES)

    def forward(self, inputs):
        return self.head(self.body(inputs))


def train_input_fn(params):
    p = params["train_input"]
    inputs, labels = dataset(p["samples"], seed=p["data_seed"])
    return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(inputs, labels),
                                       batch_size=p["batch_size"], shuffle=p["shuffle"], drop_last=True)


def params_norm(model):
    """The parameters' global L2 norm, as the vendor runner's log_summaries computes it."""
    norm = torch.tensor(0.0).to(model.device)
    for _, param in model.named_parameters():
        if param.requires_grad:
            norm += torch.pow(torch.norm(param), 2.0)
    return torch.sqrt(norm)


def run_train(params):
    runconfig = params["runconfig"]
    model_dir = runconfig["model_dir"]
    log_steps = runconfig["log_steps"]
    checkpoint_steps = runconfig["checkpoint_steps"]
    optimizer_params = params["optimizer"]
    log_summaries = optimizer_params.get("log_summaries", False)

    model = Classifier(params["model"]["hidden_size"])
    compiled_model = cstorch.compile(model, backend="WSE_WS")
    compiled_model.train()
    loss_fn = torch.nn.CrossEntropyLoss()

    optimizer = cstorch.optim.configure_optimizer(
        optimizer_type=optimizer_params.pop("optimizer_type"),
        params=model.parameters(),
        **optimizer_params,
    )
    lr_scheduler = cstorch.optim.configure_lr_scheduler(optimizer, optimizer_params.get("learning_rate"))
    grad_scaler = None
    if optimizer_params.get("loss_scaling_factor") == "dynamic" and compiled_model.backend.is_wse():
        grad_scaler = cstorch.amp.GradScaler(loss_scale="dynamic")

    @cstorch.step_closure
    def save_checkpoint(step):
        checkpoint_file = os.path.join(model_dir, f"checkpoint_{step}.mdl")
        state_dict = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "global_step": step}
        if lr_scheduler:
            state_dict["lr_scheduler"] = lr_scheduler.state_dict()
        if grad_scaler:
            state_dict["grad_scaler"] = grad_scaler.state_dict()
        cstorch.save(state_dict, checkpoint_file)
        logging.info(f"Saved checkpoint {checkpoint_file}")

    global_step = 0
    if runconfig.get("checkpoint_path"):
        state_dict = cstorch.load(runconfig["checkpoint_path"])
        model.load_state_dict(state_dict["model"])
        optimizer.load_state_dict(state_dict["optimizer"])
        if lr_scheduler:
            lr_scheduler.load_state_dict(state_dict["lr_scheduler"])
        if grad_scaler:
            grad_scaler.load_state_dict(state_dict["grad_scaler"])
        global_step = state_dict.get("global_step", 0)
        logging.info(f"Resuming from {runconfig['checkpoint_path']} at step {global_step}")

    writer = SummaryWriter(log_dir=os.path.join(model_dir, "train"))

    @cstorch.compile_step
    def training_step(batch):
        inputs, labels = batch
        loss = loss_fn(compiled_model(inputs), labels)
        if log_summaries:
            cstorch.scalar_summary("params_norm", params_norm(compiled_model))
        cstorch.amp.optimizer_step(
            loss, optimizer, grad_scaler,
            max_gradient_norm=optimizer_params.get("max_gradient_norm"),
            max_gradient_value=optimizer_params.get("max_gradient_value"),
        )
        if lr_scheduler:
            lr_scheduler.step()
        return loss

    @cstorch.step_closure
    def post_training_step(loss):
        if log_steps and global_step % log_steps == 0:
            logging.info(f"| Train: {compiled_model.backend.name} Step={global_step}, Loss={loss.item():.5f}")
        if torch.isnan(loss).any().item():
            raise ValueError("NaN loss detected: try a smaller learning rate.")
        cstorch.save_summaries(writer, global_step)
        if lr_scheduler:
            for group, lr in enumerate(lr_scheduler.get_last_lr()):
                writer.add_scalar(f"lr.{group}", lr, global_step)

    dataloader = cstorch.utils.data.DataLoader(
        train_input_fn, params,
        initial_step=global_step,
        num_steps=runconfig.get("num_steps"),
        max_steps=runconfig.get("max_steps"),
        num_epochs=runconfig.get("num_epochs"),
        steps_per_epoch=runconfig.get("steps_per_epoch"),
    )
    logging.info(f"{len(dataloader.dataset)} samples, batch size {dataloader.batch_size}, {dataloader.num_workers} "
                 f"loader workers, {dataloader.num_epochs} epoch(s) of {len(dataloader)} steps")

    for _epoch in range(dataloader.num_epochs):
        for batch in dataloader:
            loss = training_step(batch)
            global_step += 1
            cstorch.scalar_summary("loss", loss)
            post_training_step(loss)
            if checkpoint_steps and global_step % checkpoint_steps == 0:
                save_checkpoint(global_step)
    writer.close()
    logging.info(f"Training completed at step {global_step}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model-dir", default="model_dir")
    p.add_argument("--max-steps", type=int, default=40, help="the run's last global step")
    p.add_argument("--num-epochs", type=int, help="epochs over the data instead (each of --steps-per-epoch)")
    p.add_argument("--steps-per-epoch", type=int)
    p.add_argument("--checkpoint-steps", type=int, default=20)
    p.add_argument("--checkpoint", help="resume from this checkpoint")
    p.add_argument("--log-steps", type=int, default=10)
    p.add_argument("--seed", type=int, default=2023)
    args = p.parse_args()

    params = {
        "runconfig": {
            "model_dir": args.model_dir, "compile_dir": os.path.join(args.model_dir, "compile"),
            "checkpoint_steps": args.checkpoint_steps, "checkpoint_path": args.checkpoint,
            "max_steps": args.max_steps, "num_epochs": args.num_epochs, "steps_per_epoch": args.steps_per_epoch,
            "log_steps": args.log_steps, "seed": args.seed, "mgmt_address": os.environ.get("CS_CONNECT"),
            "num_wgt_servers": 1, "num_act_servers": 1, "transfer_processes": 1, "num_workers_per_csx": 1,
            "debug_args_path": None, "credentials_path": None, "job_time_sec": 3600, "disable_version_check": True,
        },
        "model": {"hidden_size": 64},
        "optimizer": {
            "optimizer_type": "AdamW", "learning_rate": {"scheduler": "Linear", "initial_learning_rate": 0.02,
                                                         "end_learning_rate": 0.002, "total_iters": 80},
            "weight_decay_rate": 0.01, "beta1": 0.9, "beta2": 0.99, "eps": 1e-6, "correct_bias": True,
            "max_gradient_norm": 1.0, "loss_scaling_factor": "dynamic", "log_summaries": True,
        },
        "train_input": {"samples": 1024, "batch_size": 32, "data_seed": 0, "shuffle": True},
    }
    runconfig = params["runconfig"]
    cstorch.configure(
        model_dir=runconfig["model_dir"],
        compile_dir=runconfig["compile_dir"],
        compile_only=False,
        validate_only=False,
        checkpoint_steps=runconfig["checkpoint_steps"],
        seed=runconfig["seed"],
        num_csx=1,
        max_wgt_servers=runconfig["num_wgt_servers"],
        mgmt_address=runconfig["mgmt_address"],
        credentials_path=runconfig["credentials_path"],
        debug_args=get_debug_args(runconfig["debug_args_path"]),
        transfer_processes=runconfig["transfer_processes"],
        num_workers_per_csx=runconfig["num_workers_per_csx"],
        execution_strategy=ExecutionStrategy.ES_WEIGHT_STREAMING,
        max_act_per_csx=runconfig["num_act_servers"],
        job_time_sec=runconfig["job_time_sec"],
        disable_version_check=runconfig["disable_version_check"],
    )
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    run_train(params)


if __name__ == "__main__":
    main()
