"""Reading user data files and datasets (Parquet, CSV, directories, globs) with one-line errors."""
