#!/bin/sh
# raw probe prolog/epilog: $0 tells which
kind=$(basename "$0" .sh)
out=/tmp/probe/$kind.${SLURM_JOB_ID:-nojob}
env | sort > $out.env
{ echo "args: $*"; echo "cwd: $(pwd)"; id; echo "ppid=$PPID"; ps -o pid,ppid,user,args -p $PPID; ps -ef --forest | grep -v ' \[' ; echo "--- parent env:"; tr '\0' '\n' < /proc/$PPID/environ | sort; ls -l /proc/$$/fd; ulimit -a; umask; } > $out.info 2>&1
echo "PROLOG-STDOUT-LINE $kind"
echo "PROLOG-STDERR-LINE $kind" >&2
if [ "$kind" = prolog ] && [ -f /tmp/probe/comment ]; then
  s=$(date +%s.%N)
  timeout 30 scontrol update JobId=$SLURM_JOB_ID Comment="probe comment from prolog" > $out.comment 2>&1
  echo "rc=$? secs=$(echo "$(date +%s.%N) - $s" | bc) " >> $out.comment
fi
exit 0
