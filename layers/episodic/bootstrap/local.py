"""The local composition root: the service wired to SQLite, the folder archive and MiniLM."""

from __future__ import annotations

from pathlib import Path

from episodic.adapters.files.archive import FolderArchive
from episodic.adapters.inprocess.notifier import LogReviewNotifier
from episodic.adapters.sqlite.store import SqliteStore
from episodic.adapters.summarisers.extractive import ExtractiveSummariser
from episodic.adapters.vectors.threads import blas_on_one_thread
from episodic.adapters.webhook.sender import WebhookSender
from episodic.application.ports import Clock, Embedder, ReviewNotifier
from episodic.application.service import MemoryService
from episodic.application.settings import Settings
from episodic.application.usecases.names_ahead import NamesAhead
from episodic.bootstrap.embedders import local_embedder
from episodic.domain.forgetting.pseudonyms import Pseudonyms
from episodic.logs import service_logger


def prepare_data_dir(settings: Settings) -> Path:
    """The database's path in the data dir, created owner-only if missing, with the database
    created or upgraded to this version's schema (:mod:`episodic.adapters.sqlite.upgrade`) and its
    lexical text re-indexed if an earlier version wrote it (``Maintenance.refresh_search_text``).
    ``episodic serve`` calls it before forking its workers, so each step runs once, in one
    process, and no worker waits on another's or repeats it at its start."""
    path = _data_dir(settings) / "episodic.db"
    SqliteStore(path).close()
    return path


def _data_dir(settings: Settings) -> Path:
    data_dir = settings.data_dir.expanduser().resolve()
    if not data_dir.exists():
        data_dir.mkdir(parents=True, mode=0o700)  # memories are private: owner-only from the start
    return data_dir


def _webhook(settings: Settings) -> WebhookSender | None:
    """The configured webhook's sender, or None (no memory events go out)."""
    if not settings.event_webhook or settings.event_webhook_secret is None:
        return None
    return WebhookSender(settings.event_webhook, settings.event_webhook_secret.get_secret_value())


def build_local_service(
    settings: Settings,
    *,
    embedder: Embedder | None = None,
    clock: Clock | None = None,
    notifier: ReviewNotifier | None = None,
) -> MemoryService:
    """The service over ``settings.data_dir``; ``embedder``, ``clock`` and ``notifier`` replace
    the defaults (the model ``EPISODIC_EMBEDDER`` names, the system clock, a notifier that logs
    each held episode)."""
    blas_on_one_thread()  # before any vector is searched
    data_dir = _data_dir(settings)
    embedder = embedder or local_embedder(settings)
    ahead = NamesAhead(embedder)
    store = SqliteStore(
        data_dir / "episodic.db",
        embedder=embedder.name,
        on_erasures=ahead.forget,  # the names offered and kept for a tenant go with its episodes
        on_new_texts=ahead.offer if settings.names_ahead and ahead.useful else None,
    )
    pseudonyms = Pseudonyms(store.pseudonym_key)
    sender, closers = _webhook(settings), [ahead.close, store.close]
    if sender is not None:
        store.outbox.start_from_now()
        closers.append(sender.close)
    return MemoryService.build(
        store=store,
        pseudonyms=pseudonyms,
        index=store.recall,
        archive=FolderArchive(data_dir / "archive", pseudonyms),
        embedder=embedder,
        notifier=notifier or LogReviewNotifier(),
        summariser=ExtractiveSummariser(embedder),
        compaction=store.compaction,
        settings=settings,
        clock=clock,
        backend="local-sqlite",
        closers=closers,
        outbox=store.outbox if sender is not None else None,
        events=sender,
    )


def quiet_notifier() -> ReviewNotifier:
    """A notifier that logs held episodes only at WARNING: for tools whose own output tells the
    story (the demo, the evaluation run)."""
    return LogReviewNotifier(service_logger("episodic-review", level="WARNING"))
