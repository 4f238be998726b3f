#!/bin/bash
#SBATCH --job-name=tiny-cnn
#SBATCH --cpus-per-task=2
#SBATCH --output=%x-%j.out
#SBATCH --io-profile=dl-train,data=/pfs/alice/shapes/train,data=/pfs/alice/shapes/val.h5,out=/pfs/alice/runs/tiny-cnn

# By the time this runs, iostage has copied both datasets to the node's
# fast storage (or found them in its cache): train.py asks iostage where.
# Checkpoints written to iostage.output() reach /pfs/alice/runs/tiny-cnn
# while the job trains; the Epilog copies whatever is left.
python3 train.py --epochs 2
