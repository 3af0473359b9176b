from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
# Real third-party data lives beside the repository and is never copied into it.
SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent")
    return SHARED_DATA
