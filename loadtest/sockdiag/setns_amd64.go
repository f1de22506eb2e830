package sockdiag

// sysSetns is setns(2) on linux/amd64 (the syscall package does not name it).
const sysSetns = 308
