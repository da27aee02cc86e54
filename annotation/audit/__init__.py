"""Expert audit samples of a batch: a seeded simple random sample of its queries, labelled blind to the
crowd; the truth the prediction-powered intervals rest on (``genderbias.machine.proportions``)."""
