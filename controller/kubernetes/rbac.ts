// Exactly what the controller may do in its namespace: the Role the Helm chart grants and the
// tests run it with. Nothing cluster-wide, no Secrets (runner pods read those by reference).
import type { V1PolicyRule } from "@kubernetes/client-node";

export const CONTROLLER_RULES: V1PolicyRule[] = [
  // One runner Job per media job: created, watched, deleted (cancellation, orphans).
  { apiGroups: ["batch"], resources: ["jobs"], verbs: ["get", "list", "watch", "create", "delete"] },
  // Their pods are only read: their state becomes the job's status.
  { apiGroups: [""], resources: ["pods", "pods/status"], verbs: ["get", "list", "watch"] },
  // Leader election among controller replicas.
  { apiGroups: ["coordination.k8s.io"], resources: ["leases"], verbs: ["get", "create", "update"] },
  // Events on runner Jobs (why a job failed), for kubectl describe (events.ts).
  { apiGroups: ["", "events.k8s.io"], resources: ["events"], verbs: ["create", "patch"] },
];
