"""Code an RLlib spec names in its config: a callbacks class, an event function, a mapping."""

from ray.rllib.callbacks.callbacks import RLlibCallback


class MarkResults(RLlibCallback):
    """Marks every training result: proves RLlib called it."""

    def on_train_result(self, *, algorithm, metrics_logger=None, result, **kwargs):
        result["callbacks_mark"] = 1


def on_episode_end(*, episode, **kwargs):
    return None


def mapping(agent_id, episode, **kwargs):
    return "p0"


NOT_CODE = 3
