"""Active learning with a learned acquisition policy: reinforced active learning (RAL, thesis ch. 4; Haußmann,
Hamprecht & Kandemir 2019) and its fixed-heuristic baselines. The labelling run that uses them is the method
`active_learning` (bnnrepro.methods.active_learning)."""
