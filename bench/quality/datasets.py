"""The evaluation sets: a BEIR folder (SciFact), and two sets on the real Obsidian Hub vault.

A dataset becomes a vault the product indexes like any other: for BEIR, one
note per document (``<doc id>.md`` holding ``# title`` and the text), so a
result's path maps straight back to its document id; for the paraphrase set
(``bench/paraphrase``) and the everyday questions (``bench/vault_questions``,
split once into a tuning and a held-out half), the real Obsidian Hub notes,
whose vault-relative paths are the document ids.
"""

from __future__ import annotations

import csv
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

__all__ = [
    "PARAPHRASE_DIR",
    "VAULT_QUESTIONS_DIR",
    "VAULT_SPLITS",
    "Dataset",
    "extract_obsidian_hub",
    "load_beir",
    "load_paraphrase",
    "load_vault_questions",
    "write_beir_vault",
]

PARAPHRASE_DIR = Path(__file__).resolve().parent.parent / "paraphrase"
VAULT_QUESTIONS_DIR = Path(__file__).resolve().parent.parent / "vault_questions"
# The committed halves of the everyday questions: choose on `tuning`, report `heldout`.
VAULT_SPLITS = ("tuning", "heldout")


@dataclass(frozen=True, slots=True)
class Dataset:
    """Queries and judgments of one split, and how results map to judged documents."""

    name: str
    split: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    doc_id_is_path: bool

    def doc_id(self, path: str) -> str:
        """The judged document a result path stands for."""
        return path if self.doc_id_is_path else PurePosixPath(path).stem


def _read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t")
        next(reader, None)  # header
        for row in reader:
            if len(row) >= 3:
                qrels.setdefault(row[0], {})[row[1]] = int(row[2])
    return qrels


def _read_queries(path: Path, wanted: set[str]) -> dict[str, str]:
    queries: dict[str, str] = {}
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                item = json.loads(line)
                if str(item["_id"]) in wanted:
                    queries[str(item["_id"])] = str(item["text"])
    return queries


def load_beir(folder: Path, split: str) -> Dataset:
    """A BEIR folder's queries and qrels for ``split`` (``qrels/<split>.tsv``)."""
    qrels = _read_qrels(folder / "qrels" / f"{split}.tsv")
    queries = _read_queries(folder / "queries.jsonl", set(qrels))
    return Dataset(folder.name, split, queries, qrels, doc_id_is_path=False)


def write_beir_vault(folder: Path, vault: Path) -> int:
    """Write one note per corpus document into ``vault``; returns the count.

    Existing files with the same content are left alone, so the indexer's
    incremental scan sees nothing new on a second run.
    """
    vault.mkdir(parents=True, exist_ok=True)
    count = 0
    with (folder / "corpus.jsonl").open(encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            doc = json.loads(line)
            title = " ".join(str(doc.get("title") or "").split()) or str(doc["_id"])
            body = f"# {title}\n\n{doc.get('text', '').strip()}\n"
            target = vault / f"{doc['_id']}.md"
            if not target.exists() or target.read_text(encoding="utf-8") != body:
                target.write_text(body, encoding="utf-8")
            count += 1
    return count


def load_paraphrase(split: str = "test") -> Dataset:
    """The committed paraphrase queries on the Obsidian Hub vault."""
    qrels = _read_qrels(PARAPHRASE_DIR / "qrels" / f"{split}.tsv")
    queries = _read_queries(PARAPHRASE_DIR / "queries.jsonl", set(qrels))
    return Dataset("paraphrase", split, queries, qrels, doc_id_is_path=True)


def load_vault_questions(split: str) -> Dataset:
    """One committed half (``tuning`` or ``heldout``) of the everyday questions on the Hub vault."""
    if split not in VAULT_SPLITS:
        raise ValueError(f"unknown split {split!r} of the vault questions (use {VAULT_SPLITS})")
    qrels = _read_qrels(VAULT_QUESTIONS_DIR / "qrels" / f"{split}.tsv")
    queries = _read_queries(VAULT_QUESTIONS_DIR / "queries.jsonl", set(qrels))
    return Dataset("vault questions", split, queries, qrels, doc_id_is_path=True)


def extract_obsidian_hub(archive: Path, vault: Path) -> int:
    """Unpack the Obsidian Hub archive's notes (``vault/...``) into ``vault``."""
    if vault.is_dir() and any(vault.iterdir()):
        return sum(1 for _ in vault.rglob("*.md"))
    vault.mkdir(parents=True, exist_ok=True)
    count = 0
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.endswith(".md"):
                continue
            parts = PurePosixPath(member.name).parts
            if "vault" not in parts:
                continue
            rel = PurePosixPath(*parts[parts.index("vault") + 1 :])
            if ".." in rel.parts or not rel.parts:
                continue
            source = tar.extractfile(member)
            if source is None:
                continue
            target = vault / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read())
            count += 1
    return count
