"""The lock files under requirements/ agree with pyproject.toml and with each other.

pyproject.toml names three sets (runtime dependencies, the `test` group, the `ml` extra); each lock
pins every package of its set, with hashes, at one version. These checks read the files as a plain
parser of the pip requirements format, independent of the tool that wrote them.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
TEST_ONLY = {"pytest", "pytest-django", "hypothesis", "playwright", "factory-boy", "datasets"}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement(spec: str) -> tuple[str, str]:
    name, _, version = spec.split(";")[0].strip().partition("==")
    assert version, f"{spec!r} is not pinned with =="
    return norm(name), version.strip()


def lock(name: str) -> dict[str, list[tuple[str, list[str]]]]:
    """{package: [(version, hashes), ...]} — several entries only where markers split a package."""
    entries: dict[str, list[tuple[str, list[str]]]] = {}
    text = (REPO / "requirements" / name).read_text()
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        block = block.strip()
        if not block or block.startswith("#"):
            continue
        head = block.splitlines()[0].rstrip(" \\")
        package, version = requirement(head)
        hashes = re.findall(r"--hash=sha256:([0-9a-f]{64})", block)
        entries.setdefault(package, []).append((version, hashes))
    return entries


@pytest.mark.parametrize("name", ["runtime.lock", "test.lock", "ml.lock", "installer.lock"])
def test_every_locked_package_is_pinned_with_hashes(name):
    entries = lock(name)
    assert entries
    for package, versions in entries.items():
        for version, hashes in versions:
            assert hashes, f"{name}: {package}=={version} has no hash"


def test_runtime_lock_has_the_dependencies_and_no_test_tool():
    runtime = lock("runtime.lock")
    for spec in PYPROJECT["project"]["dependencies"]:
        package, version = requirement(spec)
        assert [v for v, _ in runtime.get(package, [])] == [version], (package, runtime.get(package))
    assert not TEST_ONLY & set(runtime), TEST_ONLY & set(runtime)


def test_test_lock_adds_the_test_group_to_the_same_runtime_versions():
    runtime, test = lock("runtime.lock"), lock("test.lock")
    group = dict(requirement(spec) for spec in PYPROJECT["dependency-groups"]["test"])
    assert set(group) == TEST_ONLY
    for package, version in group.items():
        assert [v for v, _ in test[package]] == [version]
    for package, versions in runtime.items():
        assert [v for v, _ in test.get(package, [])] == [v for v, _ in versions], package


def test_ml_lock_takes_torch_as_the_cpu_build_and_agrees_with_the_test_lock():
    ml, test = lock("ml.lock"), lock("test.lock")
    extra = dict(requirement(spec) for spec in PYPROJECT["project"]["optional-dependencies"]["ml"])
    for package, version in extra.items():
        (locked, _), = ml[package]
        assert locked == (version + "+cpu" if package == "torch" else version), (package, locked)
    assert not any(p.startswith("nvidia-") for p in ml), "a CUDA build of torch crept in"
    for package in set(ml) & set(test):
        assert [v for v, _ in ml[package]] == [v for v, _ in test[package]], package


def test_installed_packages_match_the_test_lock():
    """The environment the suite runs in was installed through the lock (what make test does)."""
    from importlib import metadata

    from packaging.markers import Marker

    text = (REPO / "requirements" / "test.lock").read_text()
    for head in re.findall(r"^([A-Za-z0-9][^\n\\]*)", text, flags=re.M):
        spec, _, marker = head.partition(";")
        if marker.strip() and not Marker(marker.strip()).evaluate():
            continue  # another platform's package (colorama on Windows, tzdata where there is none)
        package, version = requirement(spec)
        assert metadata.version(package) == version, (package, metadata.version(package), version)
