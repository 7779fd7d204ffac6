"""One module per page of the report: each exports a `PageKind` (or, for `rank`, plans a rank's page)."""
