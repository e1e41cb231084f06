"""Stand-in for wandb (Weights & Biases), written for pfl's side-by-side harness: the package
is not installable here and cannot reach its service anyway. The FedPerfix code uses it only
to log and to name a folder:

  main.py                 wandb.init(config=args, project=..., entity=...) unless --debug,
                          then wandb.run.name = <its log folder's name>
  serverbase.py evaluate  wandb.log({"Global/Acc", "Averaged/Acc", ...}) unless --debug
  serverbase.py           wandb.run.dir (where save_global_model writes the server's model)
                          and wandb.run.name (save_local_models' folder ../logs/<name>)

This module offers exactly those: `run` is None until init(), as wandb's is; init() returns a
run whose `dir` is a local folder (<WANDB_DIR or the working directory>/wandb/run-standin/files,
created) and whose `name` can be set; log() appends each dict, with a step count, as one JSON
line to the file the environment variable WANDB_STANDIN_LOG names (nothing if unset), so the
harness reads back what the official code logged. The first line holds the run's config (the
argparse values that JSON can hold). Logging never feeds back into training: no effect on
results.
"""
import json
import os

run = None


class Run:
    def __init__(self, config):
        self.config = config
        self.name = None
        self.step = 0
        self.dir = os.path.join(os.environ.get("WANDB_DIR") or os.getcwd(), "wandb", "run-standin", "files")
        os.makedirs(self.dir, exist_ok=True)


def _jsonable(config):
    items = vars(config) if hasattr(config, "__dict__") else dict(config or {})
    out = {}
    for k, v in items.items():
        if isinstance(v, (str, int, float, bool, type(None))) or (
                isinstance(v, (list, tuple)) and all(isinstance(x, (str, int, float, bool)) for x in v)):
            out[k] = v
    return out


def _write(record):
    path = os.environ.get("WANDB_STANDIN_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


def init(config=None, project=None, entity=None, **kwargs):
    global run
    run = Run(_jsonable(config))
    _write({"_init": {"project": project, "entity": entity, "config": run.config}})
    return run


def log(data, step=None, commit=None):
    if run is None:
        raise RuntimeError("wandb stand-in: log() before init()")  # as wandb's wandb.Error
    record = {"_step": run.step if step is None else step}
    record.update({k: float(v) if hasattr(v, "__float__") else v for k, v in data.items()})
    _write(record)
    run.step += 1
