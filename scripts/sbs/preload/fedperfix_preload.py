"""The modules fedperfix_official.py --start-method forkserver has every forkserver import once,
so that the processes forked from it do not import them again; part of pfl's side-by-side
harness, not of the FedPerfix code.

The FedPerfix code starts a client process, and that process starts the 4 workers of every
DataLoader it makes (one per client per round). Under forkserver each process is forked from a
server process, which Python starts fresh and which imports the modules its preload list
names; what a forked process then imports again (main.py, as spawn does) comes from that
server's memory. The preload list is a setting of the process that starts a server, so this
module, imported by every server, sets it again: the client process is forked from the first
server, inherits the list, and its own server (the DataLoaders') preloads the same modules.

MODULES are what system/main.py imports, directly or through flcore (torch, torchvision,
sklearn, h5py, ujson, timm from the pinned checkout on PYTHONPATH, and the stand-ins wandb,
opacus and calmsize). Preloading only moves imports into the server: no module here draws
random numbers at import that the code's set_random_seed() (which the client process calls
first) would not reset; the smoke check of docs/fidelity.md compared a forkserver run with a
spawn run bit for bit. A module missing from the list is imported by each process as under
spawn (slower, the same results). fedperfix_seed, imported first, carries --train-seed into
every process forked from the server.
"""
import multiprocessing

import fedperfix_seed  # noqa: F401  (--train-seed: installs itself in every forkserver)

MODULES = ["numpy", "torch", "torchvision", "sklearn.preprocessing", "sklearn.metrics", "h5py", "ujson",
           "timm", "wandb", "calmsize", "opacus",
           "flcore.servers.serveravg", "flcore.servers.serverperavg", "flcore.servers.serverlocal",
           "flcore.servers.serverapfl", "flcore.servers.serverbabu", "flcore.thread", "flcore.trainmodel.prompt",
           "flcore.trainmodel.prefix", "flcore.trainmodel.partial", "flcore.trainmodel.adapter",
           "utils.custom_multiprocess", "utils.result_utils", "utils.mem_utils"]

multiprocessing.set_forkserver_preload(["__main__", __name__, "fedperfix_seed"] + MODULES)
