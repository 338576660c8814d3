"""deploy/Containerfile, read (no image is built here: no network for base images): what it
copies exists, and it serves where Steward listens by default."""

from __future__ import annotations

import re
from pathlib import Path

from steward.config import Settings

ROOT = Path(__file__).resolve().parents[1]
RECIPE = (ROOT / "deploy" / "Containerfile").read_text()


def test_the_container_recipe_matches_the_repository_and_the_settings() -> None:
    copied = [
        source
        for line in re.findall(r"^COPY (.+)$", RECIPE, re.MULTILINE)
        for source in line.split()[:-1]
    ]
    assert copied
    for source in copied:
        assert (ROOT / source).exists(), source
    assert f"EXPOSE {Settings.model_fields['port'].default}" in RECIPE
    assert f"127.0.0.1:{Settings.model_fields['port'].default}/healthz" in RECIPE
    assert 'CMD ["steward", "up", "--host", "0.0.0.0"]' in RECIPE
    assert "ENV STEWARD_DATA_DIR=/data" in RECIPE
    assert 'VOLUME ["/data"]' in RECIPE
    assert re.search(r"^USER (?!root)", RECIPE, re.MULTILINE)
