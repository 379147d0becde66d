"""Settings owned by the pipeline (the `[pipeline]`, `[schedule]`, `[report]` and
`[captains_log]` TOML sections)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from signaldesk.settings import SettingsModel
from signaldesk.vault import DAILY_FOLDER, INBOX_FOLDER, REPORT_PATH, SIGNALS_FOLDER


class VaultSettings(SettingsModel):
    """Where the vault is."""

    path: str | None = Field(
        None,
        description=(
            "The vault folder. --vault and SIGNALDESK_VAULT take precedence; `signaldesk init` "
            "fills this in."
        ),
    )
    name: str | None = Field(
        None,
        min_length=1,
        max_length=100,
        description=(
            "This vault's name in a shared team database (team mode: every indexed note and "
            "search result carries it, and MCP tokens are allowed vaults by name). Not set: "
            "the vault folder's name."
        ),
    )
    inbox_folder: str = Field(
        INBOX_FOLDER,
        description=(
            "Vault-relative folder of unsorted captures awaiting triage (the triage report "
            "lists its notes as waiting). Point it at an inbox folder you already have; "
            "the drop folders of [newsletter] and [tool_output] usually sit inside it."
        ),
    )


class PipelineSettings(SettingsModel):
    """The staged intake pipeline."""

    ledger_path: str = Field(
        ".signaldesk/ledger.db", description="Item ledger database, relative to the vault root."
    )
    ledger_backend: Literal["sqlite", "postgres"] = Field(
        "sqlite",
        description=(
            "Where the item ledger lives: `sqlite` (the file at `ledger_path`, one machine) or "
            "`postgres` (the team database of [postgres], shared by several `serve` workers "
            "that claim feeds, items and drop-folder files so nothing is taken in twice)."
        ),
    )
    feed_concurrency: int = Field(
        8,
        ge=1,
        description="Feeds polled at once during a scan (the per-host limit still applies).",
    )
    extract_concurrency: int = Field(
        8, ge=1, description="Article pages fetched for full text at once during a scan."
    )
    queue_size: int = Field(
        64,
        ge=1,
        description=(
            "Items buffered between two pipeline stages; a full buffer slows the stage before it."
        ),
    )
    retry_attempts: int = Field(
        3, ge=1, description="Tries within one scan for a transient error (timeout, 5xx, 429)."
    )
    retry_backoff: float = Field(
        0.5, ge=0, description="Seconds before the first retry; doubled each time, with jitter."
    )
    max_attempts: int = Field(
        5,
        ge=1,
        description=(
            "Scans in which an entry's article page is tried before intake stops asking "
            "(the entry goes on with the feed's text at once, marked as a teaser; later "
            "tries wait as a failing feed does, see [rss] backoff_base)."
        ),
    )
    stage_timeout: float = Field(
        120.0, gt=0, description="Seconds one item or feed may spend in one stage before it fails."
    )


class CaptainsLogSettings(SettingsModel):
    """The daily captain's log built from local git and the day's notes."""

    repos: list[str] = Field(
        default_factory=list, description="Git repositories whose commits go into the log."
    )
    repo_roots: list[str] = Field(
        default_factory=list,
        description="Folders searched (three levels deep) for more git repositories.",
    )
    path: str = Field(
        f"{DAILY_FOLDER}/{{date}}-captains-log.md",
        description="Where the log is written, relative to the vault; {date} is YYYY-MM-DD.",
    )
    covers: str = Field(
        "same_day",
        pattern="^(previous_day|same_day)$",
        description=(
            "`same_day`: the log dated D covers D itself (Monday's also the weekend before), "
            "so `signaldesk log` shows today's work, and `serve` writes each day's log the "
            "next morning. `previous_day`: the log dated D covers D-1 (a morning log), and "
            "Monday's covers Friday to Sunday."
        ),
    )
    top_signals: int = Field(5, ge=0, description="How many of the period's top signals to list.")


class TriageSettings(SettingsModel):
    """Triage: scoring pending items, filing signal notes, indexing what was written."""

    signals_folder: str = Field(
        SIGNALS_FOLDER, description="Vault-relative folder holding one sub-folder per domain."
    )
    clipping_action: str = Field(
        "move",
        pattern="^(move|copy|leave)$",
        description=(
            "What happens to a Web Clipper note that passes: `move` it into its domain folder "
            "(scores added to its frontmatter, body untouched), `copy` it there and keep the "
            "original, or `leave` it where it is untouched (scores only in the ledger)."
        ),
    )
    after_scan: bool = Field(
        True, description="`signaldesk scan` triages what it found (score, file, index) at once."
    )
    index_after: bool = Field(
        True, description="Index the notes triage wrote in the same run, so search finds them."
    )
    batch_size: int = Field(32, ge=1, description="Items scored together (one embedding batch).")
    lock_timeout: float = Field(
        60.0,
        gt=0,
        description=(
            "Seconds a batch waits for another triage run (e.g. the scheduler's) to finish "
            "its batch; on timeout the items stay pending for the next run."
        ),
    )
    key_points: int = Field(
        5, ge=0, description="Sentences picked from the text for a note's Key points section."
    )
    summary_chars: int = Field(600, ge=80, description="Longest Summary section, in characters.")
    content_chars: int = Field(
        12_000,
        ge=500,
        description="Longest Content section, in characters (the rest stays at the source).",
    )
    slug_chars: int = Field(
        60, ge=8, le=120, description="Longest title part of a new note's file name, in characters."
    )


class ScheduleSettings(SettingsModel):
    """What `signaldesk serve` runs, how often, and for how long at most."""

    timezone: str | None = Field(
        None,
        description=(
            "IANA time zone for the daily jobs and the report's day boundaries, e.g. "
            '"Europe/Madrid" (default: the machine\'s local zone).'
        ),
    )
    feeds_interval: float = Field(
        60.0,
        gt=0,
        description=(
            "Seconds between looks for due feeds; each feed keeps its own next check time, "
            "so a look only fetches the feeds that are due."
        ),
    )
    drops_interval: float = Field(
        60.0, gt=0, description="Seconds between reads of the clipper, newsletter and tool drops."
    )
    triage_interval: float = Field(
        300.0,
        gt=0,
        description="Seconds between triage runs (a scan that finds new items triggers one too).",
    )
    index_interval: float = Field(
        900.0,
        gt=0,
        description="Seconds between safety-net incremental index runs (edits trigger one sooner).",
    )
    watch_interval: float = Field(
        5.0,
        gt=0,
        description=(
            "Seconds between stat scans of the vault looking for edits (a large vault is "
            "scanned less often, so that scanning stays under 5% of one CPU)."
        ),
    )
    watch_debounce: float = Field(
        2.0,
        ge=0,
        description="Seconds the vault must stay unchanged after an edit before it is indexed.",
    )
    report_time: str = Field(
        "07:00",
        pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
        description="Local time (HH:MM) the daily triage report is written.",
    )
    report_day: str = Field(
        "previous_day",
        pattern="^(previous_day|same_day)$",
        description=(
            "Day the scheduled report covers: `previous_day` (a morning report on yesterday) "
            "or `same_day` (an evening report)."
        ),
    )
    log_time: str = Field(
        "07:05",
        pattern=r"^([01]\d|2[0-3]):[0-5]\d$",
        description="Local time (HH:MM) the daily captain's log is written.",
    )
    catch_up: bool = Field(
        True,
        description=(
            "On start, write the daily reports and logs whose scheduled time passed while "
            "serve was not running (each missed day, up to a week back)."
        ),
    )
    search_socket: bool = Field(
        True,
        description=(
            "Answer one-shot `signaldesk search QUERY --json` commands from serve's warm "
            "index over `.signaldesk/search.sock` (a search in a new process then skips "
            "loading the search stack); false: every search runs in its own process."
        ),
    )
    daily_misfire_grace: float = Field(
        21600.0,
        gt=0,
        description=(
            "Seconds a daily job may start late (machine asleep, busy) and still run; "
            "interval jobs may be late by one interval."
        ),
    )
    feeds_timeout: float = Field(600.0, gt=0, description="Seconds one feed scan may take.")
    drops_timeout: float = Field(300.0, gt=0, description="Seconds one drop-folder read may take.")
    triage_timeout: float = Field(900.0, gt=0, description="Seconds one triage run may take.")
    index_timeout: float = Field(1800.0, gt=0, description="Seconds one index run may take.")
    watch_timeout: float = Field(60.0, gt=0, description="Seconds one vault stat scan may take.")
    report_timeout: float = Field(120.0, gt=0, description="Seconds writing the report may take.")
    log_timeout: float = Field(
        120.0, gt=0, description="Seconds writing the captain's log may take."
    )
    shutdown_grace: float = Field(
        30.0,
        ge=0,
        description=(
            "Seconds a running job may take to finish after SIGINT/SIGTERM before it is "
            "cancelled (cancelling is safe: writes are atomic, transactions roll back)."
        ),
    )


class ReportSettings(SettingsModel):
    """The daily triage report note."""

    path: str = Field(
        REPORT_PATH,
        description="Where the report is written, relative to the vault; {date} is YYYY-MM-DD.",
    )
    near_threshold: float = Field(
        0.1,
        ge=0,
        le=1,
        description=(
            "Rejected items scoring within this much below the threshold are listed as "
            "worth a look."
        ),
    )
    max_rows: int = Field(
        100, ge=1, description="Most rows listed per section (the counts are always complete)."
    )
    charts: bool = Field(True, description="Draw Mermaid charts (Obsidian renders them).")
