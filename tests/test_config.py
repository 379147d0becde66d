from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from pydantic import BaseModel

from signaldesk.pipeline.config import (
    Config,
    ConfigError,
    load_config,
    render_default_config,
    resolve_workspace,
)
from signaldesk.pipeline.vault_setup import init_vault


def _all_settings() -> list[tuple[str, str, object]]:
    found = []
    for section, field in Config.model_fields.items():
        found.append(("", section, field))
        model = field.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        found.extend((section, name, sub) for name, sub in model.model_fields.items())
    return found


@pytest.mark.parametrize(("section", "name", "field"), _all_settings())
def test_every_setting_has_help_text(section: str, name: str, field: object) -> None:
    description = getattr(field, "description", None)
    assert description and len(description) > 8, f"[{section}] {name} needs a description"
    rendered = render_default_config()
    assert " ".join(description.split()[:6]) in " ".join(rendered.replace("# ", "").split())


def test_default_config_round_trips() -> None:
    text = render_default_config({"vault": {"path": "/tmp/some vault"}})
    data = tomllib.loads(text)
    assert data["vault"]["path"] == "/tmp/some vault"
    config = Config.model_validate(data)
    assert config == Config(vault={"path": "/tmp/some vault"})


def test_init_creates_layout_and_keeps_existing_files(tmp_path: Path) -> None:
    vault = tmp_path / "v"
    report = init_vault(vault)
    assert (vault / "05-signals" / "security").is_dir()
    for drop in ("Clippings", "00-inbox/newsletters", "00-inbox/tool-output"):
        assert (vault / drop).is_dir(), drop
    assert (vault / ".indexignore").is_file()
    assert "signaldesk.toml" in report.created
    (vault / ".indexignore").write_text("mine/\n")
    again = init_vault(vault)
    assert ".indexignore" in again.kept
    assert (vault / ".indexignore").read_text() == "mine/\n"


def test_vault_resolution_order(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    init_vault(a)
    init_vault(b)
    assert resolve_workspace(a, environ={"SIGNALDESK_VAULT": str(b)}).vault == a.resolve()
    assert resolve_workspace(None, environ={"SIGNALDESK_VAULT": str(b)}).vault == b.resolve()
    from_config = resolve_workspace(None, a / "signaldesk.toml", environ={})
    assert from_config.vault == a.resolve()
    with pytest.raises(ConfigError, match="no vault"):
        resolve_workspace(None, None, environ={})


def test_a_config_that_cannot_name_the_vault_is_a_clear_error(tmp_path: Path) -> None:
    """The vault is read from the config before the config is validated (the search
    hand-over reads it without pydantic): a bad file still gets load_config's error."""
    path = tmp_path / "c.toml"
    path.write_text("[vault]\npath = 3\n")
    with pytest.raises(ConfigError, match=r"vault\.path"):
        resolve_workspace(None, path, environ={})
    path.write_text("[vault\npath = '/x'\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        resolve_workspace(None, path, environ={})


def test_invalid_config_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text("[index]\nbatch_size = -3\n")
    with pytest.raises(ConfigError, match=r"index\.batch_size"):
        load_config(path)
    path.write_text("[index\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(path)
    path.write_text("[index]\nno_such_setting = 1\n")
    with pytest.raises(ConfigError, match="no_such_setting"):
        load_config(path)


def test_each_invalid_setting_is_one_line_with_what_was_given_and_a_near_name(
    tmp_path: Path,
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(
        '[serach]\nlimit = 3\n[search]\nlimit = "ten"\n'
        '[triage]\nthreshold = 0.5\nsignal_folder = "x"\nblorp = 1\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    error = caught.value
    lines = error.message.splitlines()
    assert lines[0] == f"5 invalid setting(s) in {path}:"
    assert sorted(line.strip() for line in lines[1:]) == [
        "search.limit = 'ten': Input should be a valid integer, unable to parse string as an "
        "integer",
        "serach: not a setting (did you mean search?)",
        "triage.blorp: not a setting",
        "triage.signal_folder: not a setting (did you mean signals_folder?)",
        "triage.threshold: not a setting (did you mean scoring.threshold?)",
    ]
    assert error.hint and "signaldesk init" in error.hint


def test_init_on_an_existing_obsidian_vault_adds_only_what_signaldesk_needs(
    tmp_path: Path,
) -> None:
    vault = tmp_path / "obsidian"
    (vault / ".obsidian").mkdir(parents=True)
    (vault / "00 - Inbox").mkdir()
    (vault / "10 - Notes").mkdir()
    (vault / "10 - Notes" / "idea.md").write_text("# An idea\n", encoding="utf-8")
    before = sorted(p.name for p in vault.iterdir())
    report = init_vault(vault)
    assert report.existing_vault
    assert sorted(report.created) == [".indexignore", ".signaldesk/", "signaldesk.toml"]
    assert sorted(p.name for p in vault.iterdir()) == sorted(
        [*before, ".indexignore", ".signaldesk", "signaldesk.toml"]
    )
    assert (vault / "10 - Notes" / "idea.md").read_text(encoding="utf-8") == "# An idea\n"


def test_init_points_the_config_at_folders_the_vault_already_has(tmp_path: Path) -> None:
    from signaldesk.pipeline.config import load_config
    from signaldesk.pipeline.vault_setup import Layout

    vault = tmp_path / "obsidian"
    (vault / ".obsidian").mkdir(parents=True)
    layout = Layout(inbox="00 - Inbox", signals="20 - Signals", daily="50 - Journal")
    report = init_vault(vault, layout=layout)
    assert not report.layout_ignored
    config = load_config(vault / "signaldesk.toml")
    assert config.vault.inbox_folder == "00 - Inbox"
    assert config.newsletter.drop_folder == "00 - Inbox/newsletters"
    assert config.tool_output.drop_folder == "00 - Inbox/tool-output"
    assert config.triage.signals_folder == "20 - Signals"
    assert config.report.path == "50 - Journal/{date}-triage.md"
    assert config.captains_log.path == "50 - Journal/{date}-captains-log.md"
    # Asked for the whole convention, it uses those folders instead of the numbered ones.
    full = init_vault(vault, folders=True)
    assert "20 - Signals/security/" in full.created and "50 - Journal/" in full.created
    assert not (vault / "05-signals").exists() and not (vault / "06-daily").exists()
    # Run again with other folders: the config is kept, and init says so.
    again = init_vault(vault, layout=Layout(signals="elsewhere"))
    assert again.layout_ignored and "signaldesk.toml" in again.kept
