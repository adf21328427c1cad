"""What a spec may write where (`tune_app.rundir.allowed`): trial output only as file names in
each trial's folder, results and every tool's local store never in the system's folders. Each
refusal: exit 2 at validate and at run, one line naming the key, nothing written."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from tune_app.rundir.allowed import file_name_problem, local_store, system_folder

from .conftest import refused

SPEC = "e:\n  run: my_func\n  stop: {training_iteration: 2}\n  config: {alpha: 0.5, beta: 1}\n"


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("/abs/out.log", id="absolute"),
        pytest.param("../../../../escape.log", id="climbs"),
        pytest.param("logs/out.log", id="a-subfolder"),
        pytest.param("..", id="dot-dot"),
        pytest.param(".", id="dot"),
        pytest.param("", id="empty"),
        pytest.param("a\\b", id="backslash"),
        pytest.param("x" * 256, id="too-long"),
        # Tune's own files of the trial: its results, config and failures would be lost.
        pytest.param("result.json", id="tunes-results"),
        pytest.param("params.json", id="tunes-config"),
        pytest.param("error.txt", id="tunes-failures"),
        pytest.param("events.out.tfevents.1.host", id="tensorboard"),
        pytest.param("checkpoint_000001", id="checkpoint"),
    ],
)
def test_a_trial_output_name_that_is_not_a_file_name_is_refused(name):
    assert file_name_problem(name) is not None


@pytest.mark.parametrize("name", ["out.log", "stdout", ".hidden", "trial output.txt", "日誌"])
def test_plain_file_names_are_taken(name):
    assert file_name_problem(name) is None


@pytest.mark.parametrize(
    ("value", "written"),
    [
        pytest.param('"/TMP/out.log"', "out.log", id="absolute-for-both"),
        pytest.param('["/TMP/out.log", x]', "out.log", id="absolute-stdout"),
        pytest.param("[x, /TMP/err.log]", "err.log", id="absolute-stderr"),
        pytest.param('"../../../../escape.log"', None, id="climbs"),
        pytest.param("[result.json, params.json]", None, id="over-tunes-files"),
    ],
)
def test_log_to_file_outside_the_trial_folder_is_refused(cli, write_spec, tmp_path, value, written):
    """Both were run, exit 0, the trials' output written where the spec said (or over the
    trial's result.json, its results lost)."""
    spec_file = write_spec(SPEC + f"  log_to_file: {value.replace('/TMP', str(tmp_path))}\n")
    for command in ("validate", "run"):
        result = cli(command, spec_file, "--storage-path", tmp_path / "o")
        refused(result, "e.log_to_file", "give a", "name")
    assert not (tmp_path / "o").exists()
    assert written is None or not (tmp_path / written).exists()


@pytest.mark.parametrize(
    "storage",
    [
        pytest.param("/sys/x", id="sys"),
        pytest.param("/proc/self/x", id="proc"),
        pytest.param("/etc/tune_app_results", id="etc"),
        pytest.param("LINK/x", id="symlink-to-sys"),
        # The local disk's URIs (pyarrow writes `local://` to the disk): local folders all the same.
        pytest.param("local:///etc/tune_app_results", id="local-uri"),
        pytest.param("file:///etc/tune_app_results", id="file-uri"),
        pytest.param("file:/etc/tune_app_results", id="file-uri-one-slash"),  # not ./file:/etc
    ],
)
def test_results_in_a_system_folder_are_refused(cli, write_spec, tmp_path, storage):
    """`--storage-path /sys/x` passed validate, then run failed with a raw PermissionError."""
    (tmp_path / "link").symlink_to("/sys")
    storage = storage.replace("LINK", str(tmp_path / "link"))
    spec_file = write_spec(SPEC)
    for command in ("validate", "run"):
        for args in (("--storage-path", storage), ()):
            if not args:  # the same folder, as the spec's own storage_path
                spec_file = write_spec(f"storage_path: {storage}\nexperiments:\n" + _indent(SPEC))
            key = "--storage-path" if args else "storage_path"
            refused(cli(command, spec_file, *args), "a folder of the system", key)
    assert not Path("/etc/tune_app_results").exists()


@pytest.mark.parametrize(
    ("tracker", "key", "store"),
    [
        pytest.param("mlflow", "tracking_uri", "file:///proc/mlruns", id="mlflow-file-uri"),
        pytest.param("mlflow", "tracking_uri", "sqlite:////sys/m.db", id="mlflow-sqlite"),
        pytest.param("mlflow", "tracking_uri", "/dev/mlruns", id="mlflow-path"),
        pytest.param("mlflow", "tracking_uri", "sqlite+pysqlite:////etc/m.db", id="sqlite-driver"),
        pytest.param("mlflow", "tracking_uri", "local:///proc/mlruns", id="mlflow-local-uri"),
        pytest.param("wandb", "dir", "/etc/wandb_runs", id="wandb-dir"),
    ],
)
def test_a_tracker_store_in_a_system_folder_is_refused(
    cli, write_spec, tmp_path, tracker, key, store
):
    options = f"{{{key}: '{store}'" + (", mode: offline}" if tracker == "wandb" else "}")
    spec_file = write_spec(f"trackers:\n  {tracker}: {options}\nexperiments:\n" + _indent(SPEC))
    result = cli("validate", spec_file, "--storage-path", tmp_path / "o")
    refused(result, f"trackers.{tracker}.{key}", "a folder of the system")


@pytest.mark.parametrize(
    ("uri", "folder"),
    [
        ("./mlruns", "mlruns"),
        ("file:///tmp/mlruns", "/tmp/mlruns"),
        ("sqlite:///mlflow.db", "."),
        ("sqlite:////var/data/mlflow.db", "/var/data"),
        ("sqlite+pysqlite:////var/data/mlflow.db", "/var/data"),
        ("local:///tmp/episodes", "/tmp/episodes"),
        ("http://127.0.0.1:5000", None),
        ("s3://bucket/runs", None),
        ("postgresql://u@h/db", None),
    ],
)
def test_the_local_folder_of_a_store(uri, folder):
    assert local_store(uri) == (None if folder is None else Path(folder))


def test_a_symlink_resolves_before_the_system_folders_are_asked(tmp_path):
    (tmp_path / "to-proc").symlink_to("/proc")
    assert system_folder(tmp_path / "to-proc" / "x") == Path("/proc")
    assert system_folder(tmp_path / "x") is None


@pytest.mark.parametrize(
    ("config", "path", "expected"),
    [
        pytest.param("output: episodes", "output", "a relative folder", id="relative"),
        pytest.param("output: /sys/episodes", "output", "a folder of the system", id="system"),
        pytest.param(
            "evaluation_config: {output: /etc/x}",
            "evaluation_config.output",
            "a folder of the system",
            id="in-evaluation-config",
        ),
        pytest.param(
            "evaluation_config: {output: relative/x}",
            "evaluation_config.output",
            "a relative folder",
            id="relative-in-evaluation-config",
        ),
        pytest.param(
            "output: {grid_search: [/tmp/a, /etc/x]}",
            "output.grid_search[1]",
            "a folder of the system",
            id="a-grid-value",
        ),
        pytest.param(
            "output: {choice: [/etc/x]}", "output.choice[0]", "a folder of", id="a-choice"
        ),
    ],
)
def test_rllib_output_outside_a_folder_of_the_users_is_refused(
    cli, write_spec, tmp_path, config, path, expected
):
    spec_file = write_spec(
        f"ppo:\n  run: PPO\n  env: CartPole-v1\n  stop: {{training_iteration: 1}}\n"
        f"  config: {{{config}}}\n"
    )
    result = cli("validate", spec_file, "--storage-path", tmp_path / "o")
    refused(result, f"ppo.config.{path}", expected)


def _indent(text: str) -> str:
    return "".join(f"  {line}\n" for line in text.splitlines())


def test_an_experiment_folder_made_beforehand_as_a_symlink_is_taken(tmp_path):
    """A pre-made symlink to an empty folder: raw FileExistsError, exit 1."""
    from tune_app.rundir.location import RunLocation

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "e").symlink_to(tmp_path / "elsewhere")
    folder = RunLocation.for_experiment(str(tmp_path / "results"), "e").fresh()
    assert folder.local == tmp_path / "results" / "e"
    folder.create()
    folder.record.write_text("{}")
    assert (tmp_path / "elsewhere" / "run.json").exists()
    (tmp_path / "elsewhere" / "results.jsonl").write_text("{}\n")
    again = RunLocation.for_experiment(str(tmp_path / "results"), "e").fresh()
    assert again.local == tmp_path / "results" / "e_2"  # no longer empty: a run's folder


def test_evaluate_writes_its_spec_beside_the_users_spec_only_where_that_is_it(
    tmp_path, monkeypatch
):
    """run.json names the spec file a run came from: a run folder received from someone could
    name any folder. evaluate's spec goes there only while that file holds the spec as run."""
    import json

    from tune_app.readback.best import evaluation_home
    from tune_app.rundir.location import RunLocation

    work, mine, victim = tmp_path / "work", tmp_path / "mine", tmp_path / "victim"
    for folder in (work, mine, victim):
        folder.mkdir()
    monkeypatch.chdir(work)
    run = tmp_path / "results" / "e"
    run.mkdir(parents=True)
    (run / "spec.yaml").write_text(SPEC)
    (mine / "grid.yaml").write_text(SPEC)
    cases = [
        (mine / "grid.yaml", mine / "grid-evaluate.yaml"),  # the user's spec, as run
        (victim / "evil.yaml", work / "evil-evaluate.yaml"),  # no such file there
        (Path("/dev/zero"), work / "zero-evaluate.yaml"),  # not a regular file
    ]
    (victim / "other.yaml").write_text(SPEC + "# changed\n")
    cases.append((victim / "other.yaml", work / "other-evaluate.yaml"))  # not the spec as run
    for named, expected in cases:
        (run / "run.json").write_text(json.dumps({"experiment": "e", "spec_file": str(named)}))
        spec_file, root, why = evaluation_home(RunLocation(run))
        assert spec_file == expected, named
        assert (why is None) == (expected.parent == mine), why  # said where it is not beside
        assert Path(root) == run.parent


def test_each_evaluate_writes_a_spec_of_its_own(tmp_path):
    """A second evaluate of a run replaced the spec the first's runs name in their run.json,
    so resume of the first then refused it as changed since the run; two started at once took
    one name (checked free, then written)."""
    import json

    from tune_app.readback.best import evaluation_home
    from tune_app.rundir.location import RunLocation

    run = tmp_path / "results" / "e"
    run.mkdir(parents=True)
    (run / "spec.yaml").write_text(SPEC)
    (tmp_path / "grid.yaml").write_text(SPEC)
    record = {"experiment": "e", "spec_file": str(tmp_path / "grid.yaml")}
    (run / "run.json").write_text(json.dumps(record))
    written = [evaluation_home(RunLocation(run))[0].name for _ in range(3)]  # none written yet
    assert written == ["grid-evaluate.yaml", "grid-evaluate_2.yaml", "grid-evaluate_3.yaml"]


def test_a_local_uri_naming_a_host_is_refused(cli, write_spec, tmp_path):
    """`file://results` reads `results` as a host and its path as the disk's root."""
    spec_file = write_spec('storage_path: "file://results"\nexperiments:\n' + _indent(SPEC))
    refused(cli("validate", spec_file), "storage_path", "names the host 'results'")
    store = "trackers:\n  mlflow: {tracking_uri: 'file://mlruns'}\nexperiments:\n"
    out = tmp_path / "o"
    refused(cli("validate", write_spec(store + _indent(SPEC)), "--storage-path", out), "host")
    refused(cli("analyze", "file://results"), "names the host 'results'")  # not file:/results


@pytest.mark.parametrize("blank", [" ", "\\u3000", "out/  /x"])
def test_a_folder_named_with_blanks_only_is_refused(cli, write_spec, blank):
    """`storage_path: " "` made a folder named " " in the working directory."""
    spec_file = write_spec(f'storage_path: "{blank}"\nexperiments:\n' + _indent(SPEC))
    refused(cli("validate", spec_file), "storage_path", "blanks only")


def test_a_storage_that_cannot_be_opened_is_said_in_one_short_line(cli, write_spec, monkeypatch):
    """pyarrow's error for hdfs:// without Java is 15,000 characters over many lines."""
    import pyarrow.fs

    def refuse(uri):
        raise OSError("Unable to load libjvm\n" + "dlopen(/usr/lib/jvm/libjvm.so) failed\n" * 500)

    monkeypatch.setattr(pyarrow.fs, "FileSystem", SimpleNamespace(from_uri=refuse))
    spec_file = write_spec('storage_path: "hdfs://nn:8020/x"\nexperiments:\n' + _indent(SPEC))
    line = refused(cli("validate", spec_file), "cannot open storage hdfs://nn:8020/x")
    assert line.split("; ")[0].endswith(": Unable to load libjvm"), line  # its first line only


def test_a_storage_that_does_not_answer_is_said_after_a_bounded_wait(cli, write_spec, monkeypatch):
    """With no network, validate of gs:// waited for GCS's client, blocked in C, and neither
    Ctrl-C nor SIGTERM ended it."""
    import pyarrow.fs

    from tune_app.rundir import storage

    silent = threading.Event()
    answer = SimpleNamespace(get_file_info=lambda path: silent.wait(10))
    monkeypatch.setattr(pyarrow.fs, "FileSystem", SimpleNamespace(from_uri=lambda u: (answer, u)))
    monkeypatch.setattr(storage, "REACH_S", 0.1, raising=False)  # (before it, no bound)
    spec_file = write_spec(SPEC)
    result = cli("validate", spec_file, "--storage-path", "gs://b/x")
    silent.set()
    words = "cannot reach storage gs://b/x: no answer in 0.1 s"
    refused(result, words, file=spec_file, path="--storage-path")


def test_hdfs_without_a_namenode_is_its_default_not_a_missing_bucket(monkeypatch):
    """`hdfs:///path` names Hadoop's default namenode; `s3:///path` names no bucket."""
    import pyarrow.fs

    from tune_app.rundir import storage

    answer = SimpleNamespace(get_file_info=lambda path: None)
    monkeypatch.setattr(pyarrow.fs, "FileSystem", SimpleNamespace(from_uri=lambda u: (answer, u)))
    assert storage.unreachable("hdfs:///data/runs") is None
    assert "names no bucket" in (storage.unreachable("s3:///data/runs") or "")


def test_a_storage_whose_client_raises_is_said_in_one_line_from_one_contact(monkeypatch):
    """An error other than pyarrow's or an OSError, raised in the contact's thread, made a second
    contact in the main thread, with no bound on its wait (and raised there: exit 1)."""
    import pyarrow.fs

    from tune_app.rundir import storage

    asked = []

    def ask(path):
        asked.append(path)
        raise RuntimeError("token expired\nat line 3")

    answer = SimpleNamespace(get_file_info=ask)
    monkeypatch.setattr(pyarrow.fs, "FileSystem", SimpleNamespace(from_uri=lambda u: (answer, u)))
    assert storage.unreachable("gs://b/x") == "cannot reach storage gs://b/x: token expired"
    assert asked == ["gs://b/x"]


@pytest.mark.parametrize(
    ("escaped", "shown"),
    [("\\e[31mRED", "'\\x1b'"), ("a\\rb", "'\\r'"), ("x\\u202eb", "'\\u202e'")],
    ids=["escape", "carriage-return", "right-to-left-override"],
)
def test_a_folder_named_with_characters_that_do_not_show_is_refused(
    cli, write_spec, tmp_path, escaped, shown
):
    """Each passed validate and was printed raw: a terminal acted on the escape, and a path
    with a line break or a right-to-left override printed as another."""
    spec_file = write_spec(f'storage_path: "{tmp_path}/{escaped}"\nexperiments:\n' + _indent(SPEC))
    refused(cli("validate", spec_file), "storage_path", f"holds the character {shown}")


def test_a_folder_named_with_a_nul_character_is_refused(cli, write_spec, tmp_path):
    """It crashed with exit 1 and `ValueError: embedded null byte`."""
    out = tmp_path / "o"
    spec_file = write_spec(f'storage_path: "{out}\\0x"\nexperiments:\n' + _indent(SPEC))
    refused(cli("validate", spec_file), "storage_path", "NUL character")
    store = 'trackers:\n  mlflow: {tracking_uri: "sqlite:////tmp/a\\0b/m.db"}\nexperiments:\n'
    refused(cli("validate", write_spec(store + _indent(SPEC)), "--storage-path", out), "NUL")


@pytest.mark.parametrize(
    ("target", "words"),
    [
        pytest.param("e/run.json", "'run.json' does not end in .html", id="a-runs-record"),
        pytest.param("spec.yaml", "'spec.yaml' does not end in .html", id="the-spec"),
        pytest.param("/dev/stdout", "lies in /dev, a folder of the system", id="a-device-link"),
        pytest.param("link.html", "is not a regular file (a link", id="a-link"),
    ],
)
def test_an_output_file_is_refused_where_it_would_replace_another(cli, tmp_path, target, words):
    """`report --out`, `compare --html` and `run --junit` renamed their file over whatever the
    user named: a run's run.json, the spec being run, /dev/stdout (as root: the link itself)."""
    from .test_compare import make_run

    run = make_run(tmp_path / "e", [({"x": 0.1}, [1.0])])
    other = make_run(tmp_path / "f", [({"x": 0.2}, [2.0])])
    (tmp_path / "spec.yaml").write_text(_indent(SPEC).replace("  e:", "e:", 1))
    (tmp_path / "link.html").symlink_to(tmp_path / "spec.yaml")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    page = target if target.startswith("/") else tmp_path / target
    refused(cli("report", run, "--out", page), words, path="--out")
    refused(cli("compare", run, other, "--html", page), words, path="--html")
    junit = str(page).replace(".html", ".xml") if target == "link.html" else page
    if target == "link.html":
        (tmp_path / "link.xml").symlink_to(tmp_path / "spec.yaml")
    refused(cli("run", tmp_path / "spec.yaml", "--junit", junit), path="--junit")
    assert {p: p.read_bytes() for p in before} == before  # nothing replaced
    assert not (tmp_path / "e" / "report.html").exists()


@pytest.mark.parametrize(
    ("storage", "words"),
    [
        pytest.param("~nobody_here_zz/x", "names the home of a user this machine", id="no-user"),
        pytest.param("$HOME/x", "holds $HOME, which is not expanded", id="a-variable"),
        pytest.param("/", "/ is the root of the file system", id="the-root"),
        pytest.param("file:///", "/ is the root of the file system", id="the-root-as-a-uri"),
        pytest.param("out/${RUNS}", "holds ${RUNS}, which is not expanded", id="a-variable-braced"),
        pytest.param("/tmp/" + "a" * 300, "a folder name of 300 bytes", id="a-long-name"),
        pytest.param(
            "/tmp/" + "/".join(["b" * 200] * 25), "over the 4,096 bytes", id="a-long-path"
        ),
        # Each said `cannot open storage s3:/e` or `az://b/x/e`, with neither file nor key.
        pytest.param("s3://", "s3:// names no bucket", id="no-bucket"),
        pytest.param("az://b/x", "storage az://b/x: Unrecognized filesystem", id="no-such-scheme"),
        # Each was read as a local folder named `s3:` (or `gs:`, `az:`) in the working directory.
        pytest.param("s3:/b/x", "s3:/b/x is not a URI: did you mean s3://b/x?", id="one-slash"),
        pytest.param("gs:b/x", "gs:b/x is not a URI: did you mean gs://b/x?", id="no-slash"),
        pytest.param("az:/b", "az:/b is not a URI: did you mean az://b?", id="other-scheme"),
    ],
)
def test_a_storage_path_no_folder_can_have_is_refused_in_one_line(cli, write_spec, storage, words):
    """Each exited 1 with a bare RuntimeError or OSError (File name too long)."""
    spec_file = write_spec(f'storage_path: "{storage}"\nexperiments:\n' + _indent(SPEC))
    refused(cli("validate", spec_file), words, file=spec_file, path="experiments.e.storage_path")
    given = cli("validate", spec_file, "--storage-path", storage)
    refused(given, words, file=spec_file, path="--storage-path")
