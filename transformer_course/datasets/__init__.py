"""The data the course translates, made on the spot or read from files: not rooms of the model.

The rooms of :mod:`transformer_course` are what a learner builds (the model, its training and its
decoding). The modules here *make* the data those rooms learn from; you use them, and may read
them, but the exercises never ask you to write them:

* :mod:`~transformer_course.datasets.numbers`: English → German number words (chapters 07–08),
  with strata of held-out numbers;
* :mod:`~transformer_course.datasets.sentences`: English → German sentences with real German
  grammar from a small lexicon (chapter 09);
* :mod:`~transformer_course.datasets.corpora`: parallel text from your own files, or a corpus
  from the Hugging Face Hub, cached (chapter 09).

The :class:`~transformer_course.data.Task` they fill, and the copy / reverse tasks, are in the
room :mod:`transformer_course.data` (chapter 07). Importing this package imports nothing else.
"""
