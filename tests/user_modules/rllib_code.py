"""Code an RLlib spec names in its config: a callbacks class, an event function, a mapping,
connector classes."""

from ray.rllib.callbacks.callbacks import RLlibCallback
from ray.rllib.connectors.connector_v2 import ConnectorV2


class MarkResults(RLlibCallback):
    """Marks every training result: proves RLlib called it."""

    def on_train_result(self, *, algorithm, metrics_logger=None, result, **kwargs):
        result["callbacks_mark"] = 1


def on_episode_end(*, episode, **kwargs):
    return None


def mapping(agent_id, episode, **kwargs):
    return "p0"


class PassObservations(ConnectorV2):
    """An env-to-module piece that changes nothing: made per env runner from its class."""

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        return batch


class ScaledObservations(ConnectorV2):
    """A piece that needs an argument a spec cannot give: named through a function."""

    def __init__(self, input_observation_space=None, input_action_space=None, *, scale, **kw):
        super().__init__(input_observation_space, input_action_space, **kw)
        self.scale = scale

    def __call__(self, *, rl_module, batch, episodes, **kwargs):
        return batch


NOT_CODE = 3
