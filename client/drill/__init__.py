"""Recovery drills: kill the job on purpose under load and prove that nothing was lost.

    coordinator-drill run   [--config job.toml] [--kills 3] [--seed 7] [--report-json r.json]
    coordinator-drill verify [--config job.toml] [--report-json r.json]

`reference` computes what an uninterrupted run reaches from the request log, `compare` finds the
first differing entity and renders the report, `verify` runs the checks against a deployment,
`load` drives the mixed load and `kills` kills and restarts the job. docs/operations.md explains
what each check means.
"""
