"""Files a Windows editor saved with a UTF-8 byte-order mark read as without one."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gpuperf.decisions.optimizations import load_optimizations
from gpuperf.measure.campaign import load_campaign
from gpuperf.models.persistence import load_model, save_model

ROOT = Path(__file__).resolve().parents[1]
BOM = b"\xef\xbb\xbf"


def with_bom(source: Path, path: Path) -> Path:
    path.write_bytes(BOM + source.read_bytes())
    return path


def test_campaign_optimization_and_model_files_with_a_byte_order_mark_read_as_without(tmp_path):
    """They were 'not valid TOML (Invalid statement (at line 1, column 1))' and 'Unexpected UTF-8 BOM'."""
    campaign = ROOT / "examples" / "campaign.toml"
    read, plain = load_campaign(with_bom(campaign, tmp_path / "campaign.toml")), load_campaign(campaign)
    assert read.name == plain.name and [(e.spec, e.sizes) for e in read.entries] == [(e.spec, e.sizes) for e in plain.entries]
    folder = tmp_path / "entries"
    folder.mkdir()
    with_bom(ROOT / "src" / "gpuperf" / "optimizations" / "padding.toml", folder / "my_padding.toml")
    (folder / "my_padding.toml").write_bytes((folder / "my_padding.toml").read_bytes().replace(
        b'name = "padding"', b'name = "my_padding"', 1))
    assert load_optimizations([folder])["my_padding"].title == load_optimizations()["padding"].title
    from sklearn.linear_model import LinearRegression

    model = LinearRegression().fit(np.arange(6.0).reshape(3, 2), [1.0, 2.0, 3.0])
    save_model(model, tmp_path / "m.json", feature_names=["a", "b"])
    loaded = load_model(with_bom(tmp_path / "m.json", tmp_path / "bom.json"))
    assert np.allclose(loaded.predict(np.ones((1, 2))), model.predict(np.ones((1, 2))))
