"""verl's dataset format as data: the row schema, multimodal and agent columns, and the checks
on rows that verl only makes minutes into a run. Reading files is the adapters' job.
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "BUILTIN_SCORERS": "schema",
    "ConversionError": "schema",
    "ConversionSpec": "schema",
    "SchemaChecker": "schema",
    "batch_findings": "schema",
    "conversion_findings": "schema",
    "convert_row": "schema",
    "format_rows": "schema",
    "length_stats": "schema",
    "prompt_length_findings": "schema",
    "prompt_problem": "schema",
    "scorer_for": "schema",
    "scorer_table": "schema",
})
