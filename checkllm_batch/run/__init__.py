"""One run, whatever engine schedules its batches: its record in the database (started or
resumed, failed or interrupted, finished), the evaluation of one batch of outputs, and the
single-process engine. `distributed/` schedules the same batches on Ray."""
