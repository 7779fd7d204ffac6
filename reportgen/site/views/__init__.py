"""View shaping shared by the pages: plain-data rows, columns and texts cut from the analysis; summary.json."""
