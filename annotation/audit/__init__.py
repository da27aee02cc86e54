"""Expert audit samples of a batch (issue 81, item 1): a seeded simple random sample of its queries,
labelled blind to the crowd by the researcher or annotators they trust; the truth the prediction-powered
intervals rest on (``genderbias.machine.proportions``)."""
