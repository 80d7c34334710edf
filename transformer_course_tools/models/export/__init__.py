"""Taking a course model out of the course: a folder that ``transformers`` loads, CTranslate2's model,
llama.cpp's GGUF file (``python -m transformer_course export``, chapter 16).

- :mod:`.sources`: the course checkpoint (a translator or a language model, a file or a shipped name)
  and the shape its vocabulary takes outside the course;
- :mod:`.hf_tokenizers`: the course's tokenizers as ``tokenizers`` fast tokenizers (``tokenizer.json``);
- :mod:`.folders`: the ``transformers`` folder (the room ``export.py``'s converters, the tokenizer,
  the generation settings);
- :mod:`.ct2`: CTranslate2's own converter run on that folder;
- :mod:`.gguf_file`: a GGUF file as llama.cpp's ``convert_hf_to_gguf.py`` lays it out.
"""
