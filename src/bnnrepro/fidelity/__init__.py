"""What the pipeline reproduces at a scale, kept as small committed files and written up as one document.

`python -m bnnrepro.fidelity collect TREE --studies S ... --scale paper` keeps a built tree's results of those
studies (`collect`; with `--add`, beside the runs kept from earlier batches); `python -m bnnrepro.fidelity document`
writes docs/fidelity.md from what was kept (`document`). The caption claims each study is checked against are in
`bnnrepro.artifacts.claims`.
"""
