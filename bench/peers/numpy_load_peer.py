"""numpy.load of every .npy file of a folder, into memory.
  numpy_load_peer.py FOLDER"""
import os
import sys

import numpy

from common import clock, report

folder = sys.argv[1]
t = clock()
arrays = [numpy.load(os.path.join(folder, f)) for f in sorted(os.listdir(folder))]
report(t, sum(a.nbytes for a in arrays))
