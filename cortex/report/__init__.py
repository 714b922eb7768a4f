"""The report face: a case as one self-contained HTML page or Markdown file for reviewers.

`escape` is the one function every text goes through, `links` the one place an `href` comes
from, `html` and `markdown` the two forms (`words` what both say alike), `tiers` what fits the
size cap, `command` the use the launcher hands the kernel to (docs/design/report.md).
"""
