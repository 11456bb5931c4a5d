//! The guest agent as a program of its own, for the tests: the initramfs's
//! `/init` until berth's own binary takes that place.

fn main() {
    if !berth_vm::agent::is_guest_init() {
        eprintln!(
            "berth-vm-agent: this is /init of a berth guest; it runs as PID 1 in the VM only"
        );
        std::process::exit(2);
    }
    berth_vm::agent::main()
}
