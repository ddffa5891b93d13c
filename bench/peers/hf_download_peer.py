"""huggingface_hub's hf_hub_download of one file from the Hub stand-in (HF_ENDPOINT) into a
cache folder; the caller empties the folder first.
  hf_download_peer.py REPO FILENAME CACHE_DIR"""
import os
import sys

from huggingface_hub import hf_hub_download

from common import clock, report

repo, filename, cache = sys.argv[1:4]
t = clock()
path = hf_hub_download(repo, filename, cache_dir=cache)
report(t, os.path.getsize(path))
