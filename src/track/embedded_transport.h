// EmbeddedTransport: a TrackingRun's requests to a store in this process (a
// `sqlite:` tracking URI), made by calling the MLflow service and the
// artifact store the server would call, with no HTTP in between. It answers
// as the server would over RestTransport: the same checks, the same JSON,
// and refusals with the same codes and words.
#ifndef COHORT_TRACK_EMBEDDED_TRANSPORT_H_
#define COHORT_TRACK_EMBEDDED_TRANSPORT_H_

#include <memory>

#include "artifacts/artifact_store.h"
#include "track/store.h"
#include "track/transport.h"

namespace cohort::track {

std::unique_ptr<Transport> NewEmbeddedTransport(
    std::unique_ptr<TrackingStore> store, std::unique_ptr<artifacts::ArtifactStore> artifacts);

}  // namespace cohort::track

#endif  // COHORT_TRACK_EMBEDDED_TRANSPORT_H_
