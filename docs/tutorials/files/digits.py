"""A small PyTorch MLP on scikit-learn's digits, as a tune.Trainable class that checkpoints its
weights, reads its dataset from Ray's object store, and builds the optimizer its config chose."""

import os

import numpy as np
import ray
import torch
from ray import tune
from sklearn.datasets import load_digits

WEIGHTS = "model.pt"  # the file each checkpoint holds


def make_model(hidden):
    """The network the weights belong to: 64 pixels in, 10 digits out."""
    return torch.nn.Sequential(
        torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
    )


def split():
    """The digits as float pixels in [0, 1] and labels, 1,500 to train on and the rest held out."""
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(y))
    x, y = (x[order] / 16.0).astype(np.float32), y[order]
    return x[:1500], y[:1500], x[1500:], y[1500:]


@ray.remote(num_cpus=0)
class Dataset:
    """Loads the data once and keeps it in Ray's object store for every trial of the run."""

    def __init__(self):
        self.ref = ray.put(split())

    def ref_in_list(self):
        return [self.ref]  # a reference in a list is passed as a reference, not as the data


def shared_dataset():
    """The run's one copy of the data: every trial on a machine reads the same object-store
    memory (numpy arrays are not copied), and the data is loaded by the first trial only.
    Returns the actor's handle too: a trial keeps it, since Ray stops an actor (named or not)
    once no handle to it is left, and the next trial would find none, or one stopping."""
    name = f"digits-{ray.get_runtime_context().get_job_id()}"  # one per run
    store = Dataset.options(
        name=name,
        get_if_exists=True,
        scheduling_strategy="DEFAULT",  # outside the trial's bundles
    ).remote()
    (ref,) = ray.get(store.ref_in_list.remote())
    return store, ref, ray.get(ref)


class DigitsMLP(tune.Trainable):
    """One epoch of minibatches a step; reports the held-out accuracy."""

    def setup(self, config):
        self.store, ref, (self.x, self.y, self.x_test, self.y_test) = shared_dataset()
        self.dataset = ref.hex()  # which object the data came from, reported with each result
        self.build(config)

    def build(self, config):
        torch.manual_seed(config.get("seed", 0))
        self.model = make_model(config["hidden"])
        opt = config["optimizer"]  # one of the spec's choices: its keys depend on its name
        if opt["name"] == "sgd":
            self.opt = torch.optim.SGD(
                self.model.parameters(), lr=config["lr"], momentum=opt["momentum"]
            )
        else:
            self.opt = torch.optim.Adam(self.model.parameters(), lr=config["lr"])

    def step(self):
        x, y = torch.from_numpy(self.x), torch.from_numpy(self.y)
        for batch in torch.randperm(len(y)).split(100):
            loss = torch.nn.functional.cross_entropy(self.model(x[batch]), y[batch])
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        with torch.no_grad():
            guess = self.model(torch.from_numpy(self.x_test)).argmax(dim=1).numpy()
        return {"accuracy": float((guess == self.y_test).mean()), "dataset": self.dataset}

    def save_checkpoint(self, checkpoint_dir):
        torch.save(self.model.state_dict(), os.path.join(checkpoint_dir, WEIGHTS))

    def load_checkpoint(self, checkpoint_dir):
        self.model.load_state_dict(torch.load(os.path.join(checkpoint_dir, WEIGHTS)))

    def reset_config(self, new_config):
        """A new trial in this process (Tune reuses it): the new config's model, the same data."""
        self.build(new_config)
        return True
