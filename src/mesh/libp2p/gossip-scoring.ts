/**
 * Gossipsub peer scoring for the mesh topic: what makes a `Reject` cost the
 * peer that delivered the frame. Gossipsub scores the peer a message came
 * from (the relay, which for a frame published directly is its signer);
 * the core answers `reject` only for what no honest member sends (an
 * undecodable or oversized frame, a forged origin, a replay, bad record
 * grammar) and `ignore` for what may be nobody's fault (an entry ahead of our
 * clock, a full queue), so honest members keep a score of 0 or above.
 *
 * The score of a peer on the topic is
 *
 *   min(10, P1 + P2 − 10 · P4²)            P4 = invalid frames it delivered,
 *                                               × 0.99 every second
 *
 * with small positive terms for time in the mesh (P1, up to +3 after five
 * minutes) and first deliveries of valid frames (P2, up to +5), so:
 *
 * - one bad frame takes a peer below 0: it is pruned from our mesh at the
 *   next heartbeat and its grafts are refused;
 * - two take it below the gossip threshold (−10): its IHAVE/IWANT are
 *   ignored;
 * - three take it below the publish threshold (−50) and the graylist
 *   threshold (−80): we publish nothing to it and drop every RPC it sends
 *   before decoding its messages. Gossipsub caches a score for one heartbeat
 *   (1 s) and lets a peer at 0 or above through for 128 messages or 1 s, so
 *   a flood is dropped within about a second; 100 bad frames keep it
 *   graylisted for about six minutes, and longer if it goes on.
 *
 * What is off, and why: the mesh-delivery terms (P3, P3b), since a quiet
 * mesh delivers nothing and its honest peers must not be pruned for it; IP
 * colocation (P6), since members of one private mesh often share an address
 * (containers on one host, NAT, tests on 127.0.0.1). Behaviour penalties
 * (P7: grafting during a backoff, IWANT promises broken) count from the
 * sixth, so a loaded honest peer is not graylisted for a few late replies.
 * Scores are kept an hour after a peer disconnects, so reconnecting does not
 * clear one; a member can still mint a new peer id (every member holds the
 * swarm key), which starts at 0 again.
 */
import type { GossipsubOpts } from '@libp2p/gossipsub'
import type { PeerScoreThresholds, TopicScoreParams } from '@libp2p/gossipsub/score'

export const MESH_SCORE_THRESHOLDS: Readonly<PeerScoreThresholds> = {
  gossipThreshold: -10,
  publishThreshold: -50,
  graylistThreshold: -80,
  // Peer exchange (when on) is taken from peers with a record of valid frames or time in our mesh, and no bad frame.
  acceptPXThreshold: 1,
  opportunisticGraftThreshold: 3
}

function meshTopicScoreParams (): TopicScoreParams {
  return {
    topicWeight: 1,
    timeInMeshWeight: 0.01,
    timeInMeshQuantum: 1000,
    timeInMeshCap: 300,
    firstMessageDeliveriesWeight: 0.5,
    firstMessageDeliveriesDecay: 0.9,
    firstMessageDeliveriesCap: 10,
    meshMessageDeliveriesWeight: 0,
    meshMessageDeliveriesDecay: 0.5,
    meshMessageDeliveriesCap: 100,
    meshMessageDeliveriesThreshold: 1,
    meshMessageDeliveriesWindow: 10,
    meshMessageDeliveriesActivation: 5000,
    meshFailurePenaltyWeight: 0,
    meshFailurePenaltyDecay: 0.5,
    invalidMessageDeliveriesWeight: -10,
    invalidMessageDeliveriesDecay: 0.99
  }
}

/** Gossipsub options that score peers on `topic` as described above. */
export function meshScoring (topic: string): Pick<GossipsubOpts, 'scoreParams' | 'scoreThresholds'> {
  return {
    scoreParams: {
      topics: { [topic]: meshTopicScoreParams() },
      topicScoreCap: 10,
      appSpecificScore: () => 0,
      appSpecificWeight: 1,
      IPColocationFactorWeight: 0,
      IPColocationFactorThreshold: 10,
      IPColocationFactorWhitelist: new Set(),
      behaviourPenaltyWeight: -1,
      behaviourPenaltyThreshold: 5,
      behaviourPenaltyDecay: 0.99,
      decayInterval: 1000,
      decayToZero: 0.01,
      retainScore: 3600 * 1000
    },
    scoreThresholds: { ...MESH_SCORE_THRESHOLDS }
  }
}
