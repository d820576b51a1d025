"""Text data: tokenisation, vocabularies, article-labelled corpora, documents in order.

The readers shared by the text modalities: Ash et al. (AISTATS 2022, §4) and Arora et al.
(ICML 2019, §8) train on sentences labelled by their article (an article is a latent class, two
sentences of one article a positive pair); Logeswaran & Lee's quick-thoughts (ICLR 2018) on
sentences in order. Both modalities read their corpora (:mod:`~hardneg.data.text.sources`) and
hold their splits as :class:`~hardneg.data.text.splits.TokenSplit` from here. Names are imported
on first use (NLTK loads only when text is tokenised).
"""

from __future__ import annotations

from hardneg._lazy import lazy_names

_WHERE = {
    "ARTICLE_SOURCES": ".sources",
    "ArticleCorpus": ".corpus",
    "ArticleSplits": ".splits",
    "EncodedDocuments": ".documents",
    "TokenSplit": ".splits",
    "Vocabulary": ".vocab",
    "article_documents": ".sources",
    "encode_document_list": ".documents",
    "encode_documents": ".documents",
    "encode_padded": ".splits",
    "read_article_corpus": ".sources",
    "read_article_folder": ".corpus",
    "read_article_tsv": ".corpus",
    "read_nyt_editorials": ".nyt",
    "source_available": ".sources",
    "split_by_article": ".splits",
    "split_sentences": ".tokenize",
    "tokenized_article_splits": ".splits",
    "wiki_dump": ".sources",
    "word_tokenize": ".tokenize",
    "write_article_tsv": ".corpus",
}

__all__ = sorted(_WHERE)


__getattr__, __dir__ = lazy_names(globals(), _WHERE)
