"""The install path: what the code imports is declared, every package is pinned, torch is the CPU
build from PyPI's neighbour (PyTorch's CPU index), and README's install line is the one CI runs.

Everything here but the last test works offline and ignores this machine's pip configuration
(its find-links folder, local indexes and global constraints): pip runs with PIP_CONFIG_FILE set
to os.devnull, which skips every config file, and with --isolated, which skips PIP_* variables.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as md
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "constraints.txt"
CPU_INDEX = "https://download.pytorch.org/whl/cpu"

# Declared but not imported by name, and why: each must stay true, or the package goes.
USED_INDIRECTLY = {
    "torch": "RLlib's new API stack runs its models on torch",
    "hyperopt": "the hyperopt search, through ray.tune.search.hyperopt",
    "pandas": "Tune's Result.metrics_dataframe, read by rundir.outcome._history",
    "cmaes": "optuna's CmaEsSampler (search: {type: optuna, sampler: cmaes})",
    "hpbandster": "search: bohb, through ray.tune.search.bohb",
    "configspace": "search: bohb, through ray.tune.search.bohb",
    "moto": "tests/test_s3.py starts moto's S3 server as a command",
    "flask": "moto's server mode",
    "flask-cors": "moto's server mode",
    "ruff": "the lint command of .ci/run",
    "mypy": "the type check of .ci/run",
    "pytest-timeout": "a pytest plugin: tool.pytest's per-test timeout",
    "sphinx": "tests/test_docs.py runs sphinx-build on docs/",
    "myst-parser": "Sphinx's Markdown parser, named in docs/conf.py",
    "furo": "the docs site's theme, named in docs/conf.py",
}
# Import name -> distribution, for modules not installed here (packages_distributions covers
# the rest).
KNOWN_DISTS = {
    "yaml": "pyyaml",
    "PIL": "pillow",
    "tensorboardX": "tensorboardx",
    "grpc": "grpcio",
}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def runtime_requirements() -> list[Requirement]:
    return [Requirement(r) for r in pyproject()["project"]["dependencies"]]


def extra_test_requirements() -> list[Requirement]:
    return [Requirement(r) for r in pyproject()["project"]["optional-dependencies"]["test"]]


def optional_requirements() -> list[Requirement]:
    """The extras a feature needs only when a spec asks for it (`.[mlflow]`): the package
    checks each is installed before a run that uses it starts."""
    extras = pyproject()["project"]["optional-dependencies"]
    return [Requirement(r) for name, reqs in extras.items() if name != "test" for r in reqs]


def constraint_lines() -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in CONSTRAINTS.read_text().splitlines())
    return [line for line in lines if line]


def pins() -> dict[str, Version]:
    found = {}
    for line in constraint_lines():
        if line.startswith("-"):
            continue
        req = Requirement(line)
        (spec,) = req.specifier
        assert spec.operator == "==", f"{line}: constraints.txt pins exact versions"
        assert norm(req.name) not in found, f"{req.name} is pinned twice"
        found[norm(req.name)] = Version(spec.version)
    return found


@functools.cache
def local_modules() -> set[str]:
    names = {"tune_app", "trainables", "benchmarks", "tests", "docs"}
    # The app's own modules are always imported as tune_app.x (tune_app/tensorboard.py is not
    # the tensorboard package); scripts and tests may import their neighbours by bare name.
    for folder in ("trainables", "benchmarks", "tests"):
        names |= {p.stem for p in (ROOT / folder).rglob("*.py")}
        names |= {p.name for p in (ROOT / folder).rglob("*") if p.is_dir()}
    return names


@functools.cache
def third_party_imports(folder: str) -> dict[str, str]:
    """Top-level module -> first file importing it, for absolute imports outside the stdlib."""
    skip = set(sys.stdlib_module_names) | local_modules()
    found: dict[str, str] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in skip:
                    found.setdefault(top, str(path.relative_to(ROOT)))
    return found


@functools.cache
def installed_modules() -> dict[str, list[str]]:
    return md.packages_distributions()


def dists_of(module: str) -> set[str]:
    installed = installed_modules().get(module, [])
    return {norm(d) for d in installed} or {norm(KNOWN_DISTS.get(module, module))}


@pytest.mark.parametrize(
    ("folders", "extras"),
    [(("tune_app", "trainables"), False), (("benchmarks", "tests"), True)],
    ids=["package", "benchmarks+tests"],
)
def test_every_third_party_import_is_declared(folders, extras):
    declared = {norm(r.name) for r in runtime_requirements() + optional_requirements()}
    if extras:
        declared |= {norm(r.name) for r in extra_test_requirements()}
    missing = {}
    for folder in folders:
        for module, where in third_party_imports(folder).items():
            if not dists_of(module) & declared:
                missing[module] = where
    assert not missing, f"imported but not in pyproject.toml's dependencies: {missing}"


def test_every_declared_package_is_imported_or_says_why():
    imported = set()
    for folder in ("tune_app", "trainables", "benchmarks", "tests"):
        for module in third_party_imports(folder):
            imported |= dists_of(module)
    unused = [
        r.name
        for r in runtime_requirements() + extra_test_requirements()
        if norm(r.name) not in imported and norm(r.name) not in USED_INDIRECTLY
    ]
    assert not unused, f"declared in pyproject.toml but nothing imports them: {unused}"


def test_torch_is_pinned_to_the_cpu_build_with_pytorchs_cpu_index():
    torch = pins()["torch"]
    assert torch.local == "cpu", f"torch=={torch}: not the CPU build"
    (wanted,) = [r for r in runtime_requirements() if norm(r.name) == "torch"]
    assert torch in wanted.specifier, f"pin torch=={torch} does not meet pyproject's {wanted}"
    options = [shlex.split(line) for line in constraint_lines() if line.startswith("-")]
    # --extra-index-url keeps PyPI for everything else; --index-url would replace it.
    assert ["--extra-index-url", CPU_INDEX] in options, options
    assert not [o for o in options if o[0] in ("--index-url", "-i", "--find-links", "-f")], (
        f"index options that would hide PyPI or need a local folder: {options}"
    )


def test_every_installed_dependency_is_pinned_at_its_installed_version():
    """The closure of pyproject's requirements (with the test extra) in this environment."""
    if not md.version("torch").endswith("+cpu"):
        pytest.skip("torch here is not the CPU build (README's CUDA install): pins are for CPU")
    wanted = pins()
    todo = [
        (r.name, frozenset(r.extras)) for r in runtime_requirements() + extra_test_requirements()
    ]
    seen: set[tuple[str, frozenset]] = set()
    problems = []
    while todo:
        name, extras = todo.pop()
        if (norm(name), extras) in seen:
            continue
        seen.add((norm(name), extras))
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            problems.append(f"{name}: required but not installed")
            continue
        if norm(name) not in wanted:
            problems.append(f"{name} {dist.version}: installed but not in constraints.txt")
        elif Version(dist.version) != wanted[norm(name)]:
            problems.append(f"{name}: {dist.version} installed, {wanted[norm(name)]} pinned")
        for text in dist.requires or []:
            req = Requirement(text)
            envs = [{"extra": e} for e in (*extras, "")]
            if req.marker is None or any(req.marker.evaluate(env) for env in envs):
                todo.append((req.name, frozenset(req.extras)))
    assert not problems, "\n".join(problems)


def clean_pip_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no pip.conf at all: no find-links, local indexes
    return env


def stub_wheel(folder: Path, name: str, version: str, extras: set[str]) -> None:
    """A wheel holding only metadata, with no dependencies: enough for pip's resolver."""
    stem = f"{re.sub(r'[-_.]+', '_', name)}-{version}"
    info = f"{stem}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Provides-Extra: {e}\n" for e in sorted(extras))
    wheel = "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    with zipfile.ZipFile(folder / f"{stem}-py3-none-any.whl", "w") as z:
        z.writestr(f"{info}/METADATA", metadata)
        z.writestr(f"{info}/WHEEL", wheel)
        z.writestr(f"{info}/RECORD", "")


def test_pip_resolves_the_declared_requirements_under_the_constraints_offline(tmp_path):
    """pip reads constraints.txt (its index line included) and every requirement of pyproject
    is met by a pin; stub wheels stand in for the indexes, so nothing is fetched."""
    requirements = runtime_requirements() + extra_test_requirements()
    extras: dict[str, set[str]] = {}
    for r in requirements:
        extras.setdefault(norm(r.name), set()).update(r.extras)
    for name, version in pins().items():
        stub_wheel(tmp_path, name, str(version), extras.get(name, set()))
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--isolated", "--no-index"]
    command += ["--find-links", str(tmp_path), "--dry-run", "--ignore-installed", "--quiet"]
    command += ["--report", str(report), "-c", str(CONSTRAINTS), *map(str, requirements)]
    done = subprocess.run(command, capture_output=True, text=True, env=clean_pip_env(), timeout=120)
    assert done.returncode == 0, done.stderr
    chosen = {
        norm(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert chosen["torch"] == "2.13.0+cpu"
    assert set(chosen) == {norm(r.name) for r in requirements}, chosen


def quick_start() -> str:
    readme = (ROOT / "README.md").read_text()
    return readme.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]


def test_readme_install_line_is_what_ci_runs():
    block = re.search(r"```bash\n(.*?)\n```", quick_start(), re.S)
    assert block, "README's Quick start has no bash block"
    readme_steps = [s.strip() for s in block.group(1).splitlines()[0].split("&&")]
    ci_lines = (ROOT / ".ci/run").read_text().splitlines()
    ci_steps = [
        line for line in ci_lines if line.startswith(("python3.11 -m venv", ".venv/bin/pip"))
    ]
    assert len(ci_steps) == 2, ci_steps
    assert readme_steps[: len(ci_steps)] == ci_steps
    for step in ci_steps:
        assert "/opt/" not in step and "--find-links" not in step, step


def test_install_page_cuda_recipe_drops_exactly_the_cpu_lines():
    install = (ROOT / "docs/install.md").read_text()
    command = next(line for line in install.splitlines() if line.startswith("grep -v"))
    words = shlex.split(command)
    patterns = [words[i + 1] for i, w in enumerate(words) if w == "-e"]
    assert words[words.index(">") - 1] == "constraints.txt"
    lines = CONSTRAINTS.read_text().splitlines()
    kept = [line for line in lines if not any(re.search(p, line) for p in patterns)]
    assert sorted(set(lines) - set(kept)) == [f"--extra-index-url {CPU_INDEX}", "torch==2.13.0+cpu"]


def test_package_data_ships_every_data_file():
    globs = pyproject()["tool"]["setuptools"].get("package-data", {})
    # A data file is shipped by the globs of its own package or of a package above it.
    folders = {package: ROOT.joinpath(*package.split(".")) for package in globs}
    for package in ("tune_app", "trainables"):
        for path in (ROOT / package).rglob("*"):
            if path.is_dir() or path.suffix in (".py", ".pyc") or "__pycache__" in path.parts:
                continue
            assert any(
                path.relative_to(folder).match(g)
                for owner, folder in folders.items()
                if path.is_relative_to(folder)
                for g in globs[owner]
            ), (
                f"{path.relative_to(ROOT)} is not in [tool.setuptools.package-data]: a wheel "
                "would lack it"
            )


def reachable(host: str) -> bool:
    try:
        socket.create_connection((host, 443), timeout=5).close()
    except OSError:
        return False
    return True


def test_pip_resolves_the_install_from_pypi_and_the_cpu_index(tmp_path):
    """The real resolution, as on a machine with a default pip: needs PyPI and PyTorch's CPU
    index; skipped where either cannot be reached (this project's CI machine)."""
    for host in ("pypi.org", "download.pytorch.org"):
        if not reachable(host):
            pytest.skip(f"{host} cannot be reached")
    requirements = [str(r) for r in runtime_requirements() + extra_test_requirements()]
    report = tmp_path / "report.json"
    command = [sys.executable, "-m", "pip", "install", "--isolated", "--retries", "0"]
    if os.environ.get("PIP_CERT"):  # a proxy's CA: --isolated would drop it
        command += ["--cert", os.environ["PIP_CERT"]]
    command += ["--dry-run", "--ignore-installed", "--quiet", "--report", str(report)]
    command += ["-c", str(CONSTRAINTS), *requirements]
    done = subprocess.run(command, capture_output=True, text=True, env=clean_pip_env(), timeout=600)
    assert done.returncode == 0, done.stderr
    chosen = {
        norm(i["metadata"]["name"]): i["metadata"]["version"]
        for i in json.loads(report.read_text())["install"]
    }
    assert chosen["torch"] == "2.13.0+cpu"
    assert not [n for n in chosen if n.startswith("nvidia-")], chosen
    wanted = pins()
    assert {n: v for n, v in chosen.items() if Version(v) != wanted.get(n)} == {}
