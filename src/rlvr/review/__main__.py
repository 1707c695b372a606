"""`python -m rlvr.review ...`: the review commands without the rest of the rlvr CLI."""

from rlvr.review.cli import review_app

if __name__ == "__main__":
    review_app(prog_name="python -m rlvr.review")
