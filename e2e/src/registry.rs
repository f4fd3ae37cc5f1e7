//! Debian's docker-registry on a free loopback port with a throwaway configuration.
