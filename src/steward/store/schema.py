"""Table definitions (SQLAlchemy Core). Times are UTC epoch seconds as floats: portable, cheap to
compare and to do lease arithmetic on in SQL; JSON is stored as text and parsed in the store."""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

metadata = MetaData()

ID = String(160)

persons = Table(
    "persons",
    metadata,
    Column("id", ID, primary_key=True),
    Column("name", Text, nullable=False),
    Column("max_concurrency", Integer, nullable=False),
    Column("timezone", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    # quiet hours, local "HH:MM" (both or neither; may wrap midnight), and the digest's time
    Column("quiet_start", String(5)),
    Column("quiet_end", String(5)),
    Column("digest_at", String(5), nullable=False, server_default="18:00"),
)

goals = Table(
    "goals",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("title", Text, nullable=False),
    Column("instructions", Text, nullable=False),
    Column("constraints", Text, nullable=False),
    Column("deadline", Float),
    Column("stop_condition", Text, nullable=False),
    Column("report_policy", String(32), nullable=False),
    Column("sources", Text, nullable=False),
    Column("budget", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("state", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Index("ix_goals_person_status", "person_id", "status"),
)

goal_records = Table(
    "goal_records",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("goal_id", ID, ForeignKey("goals.id", ondelete="CASCADE"), nullable=False),
    Column("task_id", ID),
    Column("kind", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("key", String(200)),
    UniqueConstraint("key", name="uq_goal_records_key"),
    Index("ix_goal_records_goal", "goal_id", "id"),
)

tasks = Table(
    "tasks",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("goal_id", ID, ForeignKey("goals.id")),
    Column("parent_id", ID),
    Column("trigger_id", ID),
    Column("kind", String(128), nullable=False),
    Column("title", Text, nullable=False),
    Column("input", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("run_at", Float, nullable=False),
    Column("wait", Text),
    # denormalised from ``wait`` so the scheduler finds due timers and event waiters by index
    Column("wait_until", Float),
    Column("wait_event", String(128)),
    Column("wake", Text),
    Column("state", Text, nullable=False),
    Column("step_seq", Integer, nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("lease_owner", String(128)),
    Column("lease_expires_at", Float),
    # 'cancel' or 'pause' requested from outside, seen by the worker at the next step boundary
    Column("control", String(16)),
    Column("paused_from", String(16)),
    Column("result", Text),
    Column("error", Text),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Column("finished_at", Float),
    Index("ix_tasks_claim", "status", "run_at"),
    Index("ix_tasks_wait_until", "status", "wait_until"),
    Index("ix_tasks_wait_event", "person_id", "wait_event"),
    Index("ix_tasks_lease", "status", "lease_expires_at"),
    Index("ix_tasks_goal", "goal_id"),
    Index("ix_tasks_parent", "parent_id"),
    Index("ix_tasks_finished", "finished_at"),
    Index("ix_tasks_trigger", "trigger_id", "created_at"),  # a trigger's spend today
)

activations = Table(
    "activations",
    metadata,
    Column("id", ID, primary_key=True),
    Column("task_id", ID, ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
    Column("goal_id", ID),
    Column("reason", String(32), nullable=False),
    Column("worker", String(128), nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("ended_at", Float),
    Column("outcome", String(32)),
    Column("steps", Integer, nullable=False),
    Column("usage", Text, nullable=False),
    Index("ix_activations_task", "task_id", "started_at"),
    Index("ix_activations_goal", "goal_id", "started_at"),
)

steps = Table(
    "steps",
    metadata,
    Column("task_id", ID, ForeignKey("tasks.id", ondelete="CASCADE"), primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("activation_id", ID, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("output", Text),
    Column("created_at", Float, nullable=False),
)

effects = Table(
    "effects",
    metadata,
    Column("id", ID, primary_key=True),
    Column("task_id", ID, ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
    Column("step_seq", Integer, nullable=False),
    Column("key", String(200), nullable=False, unique=True),
    Column("tool", String(128), nullable=False),
    Column("args", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("idempotent", Boolean, nullable=False),
    Column("result", Text),
    Column("error", Text),
    Column("attempts", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # lease expiry (database time) when last marked sent: see Effect.send_deadline
    Column("send_deadline", Float),
    Index("ix_effects_task", "task_id"),
    Index("ix_effects_status", "status"),
)

triggers = Table(
    "triggers",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("goal_id", ID, ForeignKey("goals.id")),
    Column("name", Text, nullable=False),
    Column("kind", String(16), nullable=False),
    Column("spec", Text, nullable=False),
    Column("timezone", String(64), nullable=False),
    Column("match", Text, nullable=False),
    Column("task", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("missed_policy", String(16), nullable=False),
    Column("missed_cap", Integer, nullable=False),
    Column("grace_seconds", Float, nullable=False),
    Column("next_fire_at", Float),
    Column("last_fire_at", Float),
    Column("created_at", Float, nullable=False),
    # heartbeats: watched event types (JSON list), active hours (JSON), and their idle checks
    # as a counter rather than a row each (a 10-minute heartbeat would add 1,008 rows a week)
    Column("watch", Text, nullable=False, server_default="[]"),
    Column("active_hours", Text),
    Column("idle_beats", Integer, nullable=False, server_default="0"),
    Column("last_beat_at", Float),
    # daily budget (JSON) and, while today's is spent, when it resumes
    Column("budget", Text),
    Column("paused_until", Float),
    Index("ix_triggers_due", "enabled", "next_fire_at"),
    Index("ix_triggers_event", "person_id", "kind", "spec"),
)

firings = Table(
    "firings",
    metadata,
    Column("id", String(160), primary_key=True),
    Column("trigger_id", ID, ForeignKey("triggers.id", ondelete="CASCADE"), nullable=False),
    Column("scheduled_for", Float, nullable=False),
    Column("recorded_at", Float, nullable=False),
    Column("status", String(16), nullable=False),
    Column("task_id", ID),
    Index("ix_firings_trigger", "trigger_id", "scheduled_for"),
)

events = Table(
    "events",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("type", String(128), nullable=False),
    Column("source", String(128), nullable=False),
    Column("dedupe_key", String(200), nullable=False),
    Column("payload", Text, nullable=False),
    Column("received_at", Float, nullable=False),
    Column("routed_at", Float),
    # set when routing woke a waiting task or fired an event trigger with it: a heartbeat
    # looks only at events nothing else took
    Column("consumed_at", Float),
    UniqueConstraint("person_id", "dedupe_key", name="uq_events_dedupe"),
    Index("ix_events_unrouted", "routed_at", "received_at"),
    Index("ix_events_person_routed", "person_id", "routed_at"),  # a heartbeat's check
)

follow_ups = Table(
    "follow_ups",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("goal_id", ID, ForeignKey("goals.id", ondelete="CASCADE"), nullable=False),
    Column("task_id", ID),
    Column("due_at", Float, nullable=False),
    Column("note", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("done_at", Float),
    Column("done_task_id", ID),
    Index("ix_follow_ups_due", "goal_id", "done_at", "due_at"),
)

leases = Table(
    "leases",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("holder", String(128), nullable=False),
    Column("epoch", Integer, nullable=False),
    Column("expires_at", Float, nullable=False),
)

workers = Table(
    "workers",
    metadata,
    Column("id", ID, primary_key=True),
    Column("host", Text, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("version", Text, nullable=False),
    Column("fingerprint", Text, nullable=False),
    Column("model", Text),
    Column("roles", Text, nullable=False),
    Column("cannot_run", Text, nullable=False),
    Column("lease_seconds", Float, nullable=False),
    Column("started_at", Float, nullable=False),
    Column("heartbeat_at", Float, nullable=False),
    Column("stopped_at", Float),
    Index("ix_workers_heartbeat", "stopped_at", "heartbeat_at"),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("task_id", ID, ForeignKey("tasks.id", ondelete="CASCADE"), nullable=False),
    Column("goal_id", ID),
    Column("step_seq", Integer, nullable=False),
    Column("tool", String(128), nullable=False),
    Column("args", Text, nullable=False),
    Column("args_hash", String(64), nullable=False),
    Column("reason", Text, nullable=False),
    Column("scopes", Text, nullable=False, server_default="[]"),
    Column("roles", Text),
    Column("status", String(16), nullable=False),
    Column("decided_by", String(160)),
    Column("note", Text),
    Column("created_at", Float, nullable=False),
    Column("expires_at", Float),
    Column("decided_at", Float),
    Column("summary", Text, nullable=False, server_default=""),
    # what its tool showed beside the summary (JSON: picture, picture_sha256, facts), or NULL
    Column("preview", Text),
    Index("ix_approvals_person_status", "person_id", "status"),
    Index("ix_approvals_task", "task_id"),
)

notifications = Table(
    "notifications",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("title", Text, nullable=False),
    Column("body", Text, nullable=False),
    Column("task_id", ID),
    Column("goal_id", ID),
    Column("ref", ID),
    Column("created_at", Float, nullable=False),
    Column("read_at", Float),
    Index("ix_notifications_person", "person_id", "read_at", "created_at"),
)

artifacts = Table(
    "artifacts",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("task_id", ID),
    Column("name", Text, nullable=False),
    Column("path", Text, nullable=False),
    Column("size", Integer, nullable=False),
    Column("sha256", String(64), nullable=False),
    Column("media_type", String(128), nullable=False),
    Column("created_at", Float, nullable=False),
    Index("ix_artifacts_task", "task_id"),
)

# --- authorization state (issue 4) ---------------------------------------------------------

connections = Table(
    "connections",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("name", Text, nullable=False),
    Column("scopes", Text, nullable=False),
    Column("hosts", Text, nullable=False),
    Column("active", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("version", Integer, nullable=False, server_default="0"),
    Column("settings", Text),
    Column("bounds", Text),
    Column("secret", String(160)),
    Index("ix_connections_person", "person_id"),
    Index("ix_connections_person_version", "person_id", "version"),
)

watch_cursors = Table(
    "watch_cursors",
    metadata,
    # where a connection's trigger source has read up to, so a restart neither misses nor
    # repeats a change; its failures drive the watcher's backoff and what the person is shown
    Column(
        "connection_id",
        ID,
        ForeignKey("connections.id", ondelete="CASCADE"),
        primary_key=True,
    ),
    Column("source", String(64), primary_key=True),
    # NULL until a poll succeeded: the source's first run starts from "now"
    Column("cursor", Text),
    Column("updated_at", Float, nullable=False),
    Column("failures", Integer, nullable=False, server_default="0"),
    Column("last_error", Text),
    # not polled before this time (backoff), whichever process holds the watch
    Column("retry_at", Float),
)

grants = Table(
    "grants",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("scopes", Text, nullable=False),
    Column("lifetime", String(16), nullable=False),
    Column("constraints", Text, nullable=False),
    Column("task_id", ID),
    Column("session_id", ID),
    Column("expires_at", Float),
    Column("used_at", Float),
    Column("issued_by", String(160), nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float),
    Column("version", Integer, nullable=False, server_default="0"),
    Index("ix_grants_person_live", "person_id", "revoked_at"),
    Index("ix_grants_person_version", "person_id", "version"),
)

rules = Table(
    "rules",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("pattern", String(200), nullable=False),
    Column("mode", String(32), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("reason", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("version", Integer, nullable=False, server_default="0"),
    Index("ix_rules_person", "person_id"),
    Index("ix_rules_person_version", "person_id", "version"),
)

grant_uses = Table(
    "grant_uses",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("grant_id", ID, ForeignKey("grants.id"), nullable=False),
    Column("task_id", ID),
    Column("amount", Float, nullable=False),
    Column("at", Float, nullable=False),
    Index("ix_grant_uses_grant_at", "grant_id", "at"),
)

policy_versions = Table(
    "policy_versions",
    metadata,
    Column("person_id", ID, ForeignKey("persons.id"), primary_key=True),
    # bumped by every write of the person's connections, grants and rules, in its transaction;
    # each written row carries the version that wrote it, so a reader can fetch what changed
    Column("version", Integer, nullable=False),
    # the last version that deleted a row (a change a reader cannot fetch: reload everything)
    Column("reset_version", Integer, nullable=False),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("name", Text, nullable=False),
    Column("scopes", Text, nullable=False),
    Column("token_hash", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("revoked_at", Float),
    Column("last_used_at", Float),
    UniqueConstraint("token_hash", name="uq_api_tokens_hash"),
)

secrets = Table(
    "secrets",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("hosts", Text, nullable=False),
    Column("ciphertext", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("rotated_at", Float),
    UniqueConstraint("person_id", "name", name="uq_secrets_person_name"),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("person_id", ID),
    Column("at", Float, nullable=False),
    Column("kind", String(32), nullable=False),
    Column("actor", String(200), nullable=False),
    Column("data", Text, nullable=False),
    Column("prev_hash", String(64), nullable=False),
    Column("hash", String(64), nullable=False),
    Index("ix_audit_person", "person_id", "seq"),
)

# --- the feed: what happened, per person, in commit order (the live stream's source) -------

feed = Table(
    "feed",
    metadata,
    # a seq is never reused (pruning deletes old entries): clients resume after the last seen
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("person_id", ID, nullable=False),
    Column("at", Float, nullable=False),
    Column("kind", String(40), nullable=False),
    Column("goal_id", ID),
    Column("task_id", ID),
    Column("ref", String(200)),
    Column("summary", Text, nullable=False),
    Column("data", Text, nullable=False),
    Index("ix_feed_person_seq", "person_id", "seq"),
    Index("ix_feed_goal_seq", "goal_id", "seq"),
    sqlite_autoincrement=True,
)

# --- personal context: memory and skills (separate from task and authorization state) ------

_RECALL_COLUMNS = (
    "person_id",
    "status",
    "audience",
    "valid_from",
    "valid_to",
    "importance",
    "observed_at",
)
"""What deciding whether a memory may be recalled, and ranking it, reads."""

memories = Table(
    "memories",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("content_hash", String(32), nullable=False),
    Column("subjects", Text, nullable=False),
    # What PostgreSQL's full-text index reads when it is not content and subjects as they are:
    # a memory in a script written without spaces, its runs as bigrams (domain.lexicon)
    Column("lexical", Text),
    Column("slot", String(200)),
    Column("audience", String(140), nullable=False),
    Column("confidence", Float, nullable=False),
    Column("importance", Float, nullable=False),
    Column("observed_at", Float, nullable=False),
    Column("valid_from", Float),
    Column("valid_to", Float),
    Column("supersedes", ID),
    Column("superseded_by", ID),
    Column("status", String(16), nullable=False),
    Column("version", Integer, nullable=False),
    Column("uses", Integer, nullable=False),
    Column("sources", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    # SQLite only: the rowid of the memory's full-text row (a plain rowid may change on VACUUM)
    Column("fts_doc", Integer),
    UniqueConstraint("fts_doc", name="uq_memories_fts_doc"),
    Index("ix_memories_person_status", "person_id", "status"),
    Index("ix_memories_person_slot", "person_id", "slot"),
    Index("ix_memories_person_hash", "person_id", "content_hash"),
    # Covering indexes for recall: candidates found by vector (by id) or by full text (by
    # fts_doc) are filtered and ranked from the index alone, without reading their rows.
    Index("ix_memories_recall", "id", *_RECALL_COLUMNS),
    Index("ix_memories_fts_recall", "fts_doc", *_RECALL_COLUMNS, "id"),
)
# Full-text search over memories: on SQLite an FTS5 table ``memory_fts`` (content, subjects;
# rowid = the memory's ``fts_doc``) kept in step by the store; on PostgreSQL a GIN index on
# ``to_tsvector('english', coalesce(lexical, content || ' ' || subjects))``. Both are made by
# migrations 0005 and 0016 and, being dialect-specific, are not in this metadata. Both read
# unspaced scripts as bigrams (``steward.domain.lexicon``; ``store.memory.fts_row``).

memory_versions = Table(
    "memory_versions",
    metadata,
    Column("memory_id", ID, primary_key=True),
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("snapshot", Text, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("at", Float, nullable=False),
)

memory_sources = Table(
    "memory_sources",
    metadata,
    Column("memory_id", ID, primary_key=True),
    Column("source_key", String(340), primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Index("ix_memory_sources_key", "person_id", "source_key"),
)

memory_tombstones = Table(
    "memory_tombstones",
    metadata,
    Column("person_id", ID, ForeignKey("persons.id"), primary_key=True),
    Column("source_key", String(340), primary_key=True),
    Column("at", Float, nullable=False),
    Column("purged", Integer, nullable=False),
)

memory_vectors = Table(
    "memory_vectors",
    metadata,
    # increases with every write: a reader holding vectors up to some seq fetches only newer
    Column("seq", Integer, primary_key=True, autoincrement=True),
    Column("memory_id", ID, nullable=False),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("model", String(200), nullable=False),
    # float32, little-endian: compact, and what numpy reads directly
    Column("vector", LargeBinary, nullable=False),
    UniqueConstraint("memory_id", name="uq_memory_vectors_memory"),
    Index("ix_memory_vectors_person", "person_id", "model", "seq"),
    sqlite_autoincrement=True,  # a seq is never reused, even after the newest row is deleted
)

memory_vector_epochs = Table(
    "memory_vector_epochs",
    metadata,
    # bumped when a person's vectors are deleted (forgetting): a reader holding a copy of them
    # reloads; additions and replacements it picks up by seq alone
    Column("person_id", ID, ForeignKey("persons.id"), primary_key=True),
    Column("epoch", Integer, nullable=False),
)

memory_passes = Table(
    "memory_passes",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("task_id", ID),
    Column("status", String(16), nullable=False),
    Column("diff", Text, nullable=False),
    Column("share", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("decided_at", Float),
    Index("ix_memory_passes_person", "person_id", "created_at"),
)

skills = Table(
    "skills",
    metadata,
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("name", String(200), nullable=False),
    Column("status", String(16), nullable=False),
    Column("version", Integer, nullable=False),
    # the skill's current content (description, when to use, procedure, workflow, checks,
    # sources) as JSON; every version is kept whole in skill_versions
    Column("body", Text, nullable=False),
    Column("description", Text, nullable=False),
    Column("uses", Integer, nullable=False),
    Column("successes", Integer, nullable=False),
    Column("failures", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    UniqueConstraint("person_id", "name", name="uq_skills_person_name"),
)

skill_versions = Table(
    "skill_versions",
    metadata,
    Column("skill_id", ID, primary_key=True),
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("snapshot", Text, nullable=False),
    Column("actor", String(200), nullable=False),
    Column("reason", Text, nullable=False),
    Column("at", Float, nullable=False),
)

web_watches = Table(
    "web_watches",
    metadata,
    # a watched page: what is read on it, when that matters, and where its checks stand
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("goal_id", ID, ForeignKey("goals.id")),
    # the goal's event trigger on this watch's events (disabled with the watch)
    Column("trigger_id", ID, ForeignKey("triggers.id")),
    Column("name", Text, nullable=False),
    Column("url", Text, nullable=False),
    Column("extract", Text, nullable=False),
    Column("conditions", Text, nullable=False),
    Column("interval_seconds", Float, nullable=False),
    Column("jitter_seconds", Float, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
    # when it is next due; after failures, the backoff's retry time
    Column("next_check_at", Float, nullable=False),
    Column("checked_at", Float),
    Column("changed_at", Float),
    # the last value read (JSON: text, number, currency); NULL before the first check
    Column("value", Text),
    Column("matched", Boolean, nullable=False),
    Column("etag", Text),
    Column("last_modified", Text),
    Column("failures", Integer, nullable=False),
    Column("last_error", Text),
    # claims so far: numbers each check, so its event's dedupe key is stable across retries
    Column("checks", Integer, nullable=False),
    # the process checking it now, until when (no two processes check it at once)
    Column("lease_holder", String(128)),
    Column("lease_expires_at", Float),
    Index("ix_web_watches_due", "enabled", "next_check_at"),
    Index("ix_web_watches_person", "person_id"),
)

web_readings = Table(
    "web_readings",
    metadata,
    # a watch's values over time, one row per change (bounded per watch)
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("watch_id", ID, ForeignKey("web_watches.id", ondelete="CASCADE"), nullable=False),
    Column("at", Float, nullable=False),
    Column("value", Text, nullable=False),
    Index("ix_web_readings_watch", "watch_id", "id"),
)

channels = Table(
    "channels",
    metadata,
    # one way to reach one person (a notification service, a push subscription, a mailbox)
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("name", Text, nullable=False),
    # JSON settings that are not secret (secrets are vault references)
    Column("config", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_at", Float, nullable=False),
    # when the person last wrote or answered through it
    Column("last_used_at", Float),
    UniqueConstraint("person_id", "name", name="uq_channels_person_name"),
)

reports = Table(
    "reports",
    metadata,
    # what Steward tells the person: by the agent (the report tool) or the runtime
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("goal_id", ID, ForeignKey("goals.id")),
    Column("task_id", ID),
    Column("origin", String(16), nullable=False),
    Column("what", Text, nullable=False),
    Column("why", Text, nullable=False),
    Column("todo", Text),
    Column("importance", String(16), nullable=False),
    Column("created_at", Float, nullable=False),
    # pending, held, digest, delivered, dropped
    Column("state", String(16), nullable=False),
    # held for quiet hours: until when; in the digest: when the digest goes
    Column("hold_until", Float),
    Column("read_at", Float),
    Index("ix_reports_person", "person_id", "created_at"),
    Index("ix_reports_state", "state", "hold_until"),
)

deliveries = Table(
    "deliveries",
    metadata,
    # one message (a report, digest, approval, question or notice) to one channel
    Column("id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("channel_id", ID, ForeignKey("channels.id", ondelete="CASCADE"), nullable=False),
    # the report, approval or question it carries
    Column("ref", ID, nullable=False),
    Column("kind", String(16), nullable=False),
    # idempotency key: one delivery per message and channel, ever
    Column("key", String(400), nullable=False),
    # the OutboundMessage, JSON, written when planned
    Column("message", Text, nullable=False),
    # planned, sent, delivered, failed, in_doubt, withdrawn
    Column("status", String(16), nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("next_attempt_at", Float, nullable=False),
    Column("lease_holder", String(128)),
    Column("lease_expires_at", Float),
    Column("error", Text),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    UniqueConstraint("key", name="uq_deliveries_key"),
    Index("ix_deliveries_due", "status", "next_attempt_at"),
    Index("ix_deliveries_ref", "ref"),
)

channel_tokens = Table(
    "channel_tokens",
    metadata,
    # the reply tokens of approval mails: each bound to one approval as it was asked (its
    # arguments' hash), one person and one expiry; spent once, in the decision's transaction
    Column("id", String(32), primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("channel_id", ID, ForeignKey("channels.id", ondelete="CASCADE"), nullable=False),
    Column("approval_id", ID, nullable=False),
    Column("args_hash", String(128), nullable=False),
    Column("expires_at", Float, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("used_at", Float),
    Index("ix_channel_tokens_approval", "approval_id"),
)

mail_conversations = Table(
    "mail_conversations",
    metadata,
    # a conversation with the agent held by mail: its task, and how far its answers were mailed
    Column("task_id", ID, primary_key=True),
    Column("person_id", ID, ForeignKey("persons.id"), nullable=False),
    Column("channel_id", ID, ForeignKey("channels.id", ondelete="CASCADE"), nullable=False),
    Column("subject", Text, nullable=False),
    # the person's latest message in it: the agent's next answer replies to it
    Column("last_message_id", Text, nullable=False),
    Column("thread_refs", Text, nullable=False),
    # the step whose answer was last mailed (0: none yet)
    Column("mailed_seq", Integer, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
    Index("ix_mail_conversations_person", "person_id", "updated_at"),
)

mail_thread_messages = Table(
    "mail_thread_messages",
    metadata,
    # every Message-ID of a conversation (the person's and the agent's), so a reply finds its
    # conversation; the person's are recorded as taken, so one message is handled once
    Column("person_id", ID, ForeignKey("persons.id"), primary_key=True),
    Column("message_id", String(500), primary_key=True),
    Column("task_id", ID),
    Column("created_at", Float, nullable=False),
)
