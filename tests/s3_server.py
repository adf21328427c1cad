"""A local S3-compatible server for the tests that keep results in a bucket: moto's server mode
on 127.0.0.1, and boto3 reads of what the app wrote there."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import free_port


@contextmanager
def moto_s3(*buckets: str) -> Iterator[dict[str, str]]:
    """A moto S3 server holding `buckets`; yields the environment that points at it."""
    port = free_port()
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    server = subprocess.Popen(
        [str(Path(sys.executable).with_name("moto_server")), "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "no S3 server"
                time.sleep(0.2)
        for bucket in buckets:
            client(env).create_bucket(Bucket=bucket)
        yield env
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()


def client(env: dict[str, str]) -> Any:
    import boto3

    return boto3.client(
        "s3",
        endpoint_url=env["AWS_ENDPOINT_URL"],
        aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"],
        region_name=env["AWS_DEFAULT_REGION"],
    )


def keys(env: dict[str, str], bucket: str, prefix: str) -> set[str]:
    """The keys under `prefix`, without it."""
    found = client(env).list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix) :] for o in found}


def read(env: dict[str, str], bucket: str, key: str) -> str:
    return client(env).get_object(Bucket=bucket, Key=key)["Body"].read().decode()
