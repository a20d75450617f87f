"""What a reader sees: number formats, Markdown tables, figures and the report."""
