// Package container holds the fault driver's backends for the two container
// runtimes of oncepay: Docker Compose (Docker) and Kubernetes, as deployed
// by deploy/kind (Kube). Both implement fault.Backend and fault.Prober.
//
// Both kill a replica the way a crash does: SIGKILL to the replica's main
// process from the host, found through the container runtime, and leave the
// restart to the runtime (Compose's restart policy, the kubelet). `docker
// kill` is not used: Docker counts it as a manual stop and its restart policy
// would not start the container again. So the driver must run as root on
// the machine that runs the containers (for kind: the host of the node
// containers). Kube can instead delete the pod (KillDelete), which works from
// anywhere kubectl does but lets the kubelet send SIGTERM first, or do both
// (KillSIGKILLDelete): SIGKILL, then delete the pod so that a new one starts
// without the kubelet's crash back-off.
//
// Work in flight is read from the kernel's TCP state inside the replica's
// network namespace (sock_diag after setns), with the same rules as the
// local backend (loadtest/process): a server connection with a request
// received and not answered, or a client connection to the upstream port
// with a request sent and no answer yet.
package container
