// Records a sweep in the tracking store (include/cohort/track.h): one run for
// the sweep and one per trial, the trial's run a child of the sweep's. Built
// into the `cohort` command (it links the tracking client), not the core.
#ifndef COHORT_SWEEP_TRACKING_TRACKED_SWEEP_H_
#define COHORT_SWEEP_TRACKING_TRACKED_SWEEP_H_

#include <string>

#include "cohort/sweep.h"
#include "sweep/trial_observer.h"

namespace cohort::sweep {

// The observer for `cohort sweep --tracking URI` (URI as TrackingOptions.uri:
// "http://host:port" or "sqlite:PATH"). The experiment is the sweep's name.
// The sweep's run carries its settings as params and the best value so far
// as a metric; each trial's run its params, every number it reported by
// step, its state as a tag and MLflow's status (FINISHED: completed; KILLED:
// stopped or left paused by the algorithm, or interrupted by the controller's
// stop; FAILED: failed, with tag cohort.sweep.error). A paused trial's run
// stays open and goes on when the trial is resumed; a restarted controller
// cannot reopen a run, so an interrupted trial goes on in a new run tagged
// cohort.sweep.resumed_from. A restarted controller first ends what the
// earlier one left RUNNING (killed with -9, or the server was down when it
// closed them): the earlier sweep runs and the runs of trials then running
// or paused become KILLED, those trials' runs tagged
// cohort.sweep.state=interrupted.
// Tags: cohort.sweep.id (the first sweep run's id, the same after a
// restart), cohort.sweep.trial, mlflow.parentRunId, cohort.sweep.state, and
// for ASHA/Hyperband cohort.sweep.rungs ("1,3,9": the resources of the rungs
// of the trial's bracket, which the dashboard's rung view needs), and for a
// PBT trial started from another's checkpoint cohort.sweep.clone_of (that
// trial's number) and cohort.sweep.clone_step (the checkpoint's step), which
// the dashboard's lineage view needs. A restarted controller rebuilds both
// from the journal's replay, so a trial started again keeps them.
TrialObserverFactory TrackingObserver(const SweepSpec& spec, const std::string& uri);

}  // namespace cohort::sweep

#endif  // COHORT_SWEEP_TRACKING_TRACKED_SWEEP_H_
