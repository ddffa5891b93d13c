"""boto3's download_file (its default transfer settings: 8 MiB parts, 10 threads) of one object
from the S3 server at AWS_ENDPOINT_URL into a file.
  boto3_download_peer.py BUCKET KEY DEST"""
import os
import sys

import boto3

from common import clock, report

bucket, key, dest = sys.argv[1:4]
s3 = boto3.client("s3")
t = clock()
s3.download_file(bucket, key, dest)
report(t, os.path.getsize(dest))
