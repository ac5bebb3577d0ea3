"""The reproduction report: a PDF built with Typst from the artifact manifest."""
