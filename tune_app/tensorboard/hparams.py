"""TensorBoard's HParams summaries, built from the plugin's protos: the experiment (its columns
and metrics), and each trial's session start and end.

The plugin's own builders (`tensorboard.plugins.hparams.summary_v2` and `metadata`) import its
tensor utilities and with them TensorFlow's stub: 10 MB in every driver (boto3 where it is
installed), for three protos. These build the same summaries, byte for byte
(tests/test_tensorboard.py compares them with the plugin's).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

PLUGIN_NAME = "hparams"
PLUGIN_DATA_VERSION = 0
EXPERIMENT_TAG = "_hparams_/experiment"
SESSION_START_INFO_TAG = "_hparams_/session_start_info"
SESSION_END_INFO_TAG = "_hparams_/session_end_info"


def column(
    name: str,
    values: Sequence[Any] | None = None,
    interval: tuple[float, float] | None = None,
) -> Any:
    """An HParams column (`HParamInfo`): its discrete `values` (all of one type, as the plugin
    requires), or its real `interval`, or only its name."""
    from tensorboard.plugins.hparams import api_pb2

    info = api_pb2.HParamInfo(name=name)
    if values:
        kind = type(values[0])
        if any(type(v) is not kind for v in values):
            raise TypeError(f"HParams column {name!r}: values of more than one type: {values!r}")
        info.type = (
            api_pb2.DATA_TYPE_BOOL
            if kind is bool
            else api_pb2.DATA_TYPE_STRING
            if kind is str
            else api_pb2.DATA_TYPE_FLOAT64
        )
        info.domain_discrete.extend(sorted(values))
    elif interval is not None:
        info.type = api_pb2.DATA_TYPE_FLOAT64
        info.domain_interval.min_value, info.domain_interval.max_value = interval
    return info


def experiment(columns: Sequence[Any], metrics: Mapping[str, str], created: float | None) -> Any:
    """The experiment's summary: its `columns` (`column`), and `metrics` (scalar tag -> the
    name shown)."""
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

    found = api_pb2.Experiment(
        hparam_infos=columns,
        metric_infos=[
            api_pb2.MetricInfo(name=api_pb2.MetricName(tag=tag), display_name=shown)
            for tag, shown in metrics.items()
        ],
        time_created_secs=created,
    )
    return _summary(EXPERIMENT_TAG, plugin_data_pb2.HParamsPluginData(experiment=found))


def session_start(values: Mapping[str, bool | float | str], name: str) -> Any:
    """A trial's session start: its row, named `name`, with its `values` by column."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    info = plugin_data_pb2.SessionStartInfo(group_name=name, start_time_secs=time.time())
    for key in sorted(values):
        value = values[key]
        if not isinstance(value, bool | float | int | str) and hasattr(value, "item"):
            value = value.item()  # a numpy scalar, as the plugin takes it
        if isinstance(value, bool):
            info.hparams[key].bool_value = value
        elif isinstance(value, str):
            info.hparams[key].string_value = value
        else:
            info.hparams[key].number_value = value
    return _summary(
        SESSION_START_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_start_info=info)
    )


def session_end(failed: bool) -> Any:
    """A trial's session end: success or failure."""
    from tensorboard.plugins.hparams import api_pb2, plugin_data_pb2

    status = api_pb2.STATUS_FAILURE if failed else api_pb2.STATUS_SUCCESS
    info = plugin_data_pb2.SessionEndInfo(status=status, end_time_secs=time.time())
    return _summary(SESSION_END_INFO_TAG, plugin_data_pb2.HParamsPluginData(session_end_info=info))


def _summary(tag: str, data: Any) -> Any:
    """A summary of one value: `data` (HParamsPluginData) as the plugin's metadata, with the
    plugin's empty tensor (a float vector of length 0)."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    data.version = PLUGIN_DATA_VERSION
    summary = summary_pb2.Summary()
    summary.value.add(
        tag=tag,
        metadata=summary_pb2.SummaryMetadata(
            plugin_data=summary_pb2.SummaryMetadata.PluginData(
                plugin_name=PLUGIN_NAME, content=data.SerializeToString()
            )
        ),
        tensor=tensor_pb2.TensorProto(
            dtype=types_pb2.DT_FLOAT,
            tensor_shape=tensor_shape_pb2.TensorShapeProto(
                dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=0)]
            ),
        ),
    )
    return summary
