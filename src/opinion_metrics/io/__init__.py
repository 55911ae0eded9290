"""Reading examples from files, the lowest layer: one reader per format (`json_files`: JSON and
JSON Lines; `delimited`: CSV and TSV; `arrow`: Arrow, Parquet files and folders, `datasets`
folders) behind one table interface (`table.Table`, `read.read_table`), the column names people
give each role (`column_names`), rows of a system paired by id (`pairing`), and Arrow columns as
Python rows (`rows`: the converters the evaluate modules, `MetricState.update_arrow` and the
engines share). Imports nothing of the package.
"""
