"""A decision as the dashboard and the report show it."""

from __future__ import annotations

from golem.runtime.loop import iso


def decision_view(row: dict[str, object]) -> dict[str, object]:
    """A decision as the dashboard and the report show it: what was decided and why (the workspace's
    reasons, the frame, the cage's verdicts) and how it turned out."""
    record = row["record"] if isinstance(row["record"], dict) else {}
    workspace = record.get("workspace") or {}
    return {"tick": row["tick"], "golem_time": iso(float(str(row["golem_time"]))),
            "provider": row["provider"], "status": row["status"], "summary": row["summary"],
            "regime": record.get("regime"), "phase": record.get("phase"),
            "frame": record.get("frame"), "tier": record.get("tier"),
            "reasons": workspace.get("reasons"), "decision": record.get("decision"),
            "cage": record.get("cage"), "executions": record.get("executions"),
            "knowledge": record.get("knowledge"),
            "outcome": row["outcome"]}
