"""`python -m rlvr.audit RUN_DIR ...`: the audit without the rest of the rlvr CLI."""

from rlvr.audit.cli import audit_app

if __name__ == "__main__":
    audit_app(prog_name="python -m rlvr.audit")
