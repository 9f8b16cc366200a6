"""Admission gate: proofs, from the cell's own record, that the treatment was really applied.

A cell that fails any proof is discarded, not scored; the first failing proof names the reason.
"""

from dataclasses import asdict, dataclass

from .agent import Transcript

# Enumerated discard reasons, in the order the proofs are checked.
BUNDLE_DIGEST_MISMATCH = "bundle_digest_mismatch"
AGENT_ERROR = "agent_error"
HARNESS_ERROR = "harness_error"  # the controller or engine failed; the cell is rerun on resume
DISCARD_REASONS = (BUNDLE_DIGEST_MISMATCH, AGENT_ERROR, HARNESS_ERROR)


@dataclass(frozen=True)
class GateProof:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class GateDecision:
    admitted: bool
    discard_reason: str | None
    proofs: tuple[GateProof, ...]

    def as_json(self) -> list[dict]:
        return [asdict(p) for p in self.proofs]


def bundle_proof(report: dict, expected_digest: str) -> GateProof:
    """The verifier's report from inside the container against the digest recorded at build time."""
    seen = report.get("manifest_sha256")
    problems = [f"{k}: {', '.join(report[k][:5])}" for k in ("missing", "mismatched", "unexpected", "not_regular") if report.get(k)]
    if report.get("error"):
        problems.append(report["error"])
    if seen != expected_digest:
        problems.insert(0, f"manifest sha256 {seen} != recorded {expected_digest}")
    passed = not problems
    return GateProof("bundle_verified", passed, f"{report.get('checked', 0)} files match {expected_digest[:12]}" if passed else "; ".join(problems))


def agent_proof(transcript: Transcript) -> GateProof:
    if transcript.is_error:
        return GateProof("agent_ok", False, transcript.error or "the agent reported an error")
    return GateProof("agent_ok", True, f"{transcript.agent} finished without error")


REASON_FOR = {"bundle_verified": BUNDLE_DIGEST_MISMATCH, "agent_ok": AGENT_ERROR}


def decide(proofs: list[GateProof]) -> GateDecision:
    failed = next((p for p in proofs if not p.passed), None)
    return GateDecision(failed is None, REASON_FOR[failed.name] if failed else None, tuple(proofs))
