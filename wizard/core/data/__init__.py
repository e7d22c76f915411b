"""verl's dataset format as data: the row schema, multimodal and agent columns, and the checks
on rows that verl only makes minutes into a run. Reading files is the adapters' job.
"""
