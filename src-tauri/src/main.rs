fn main() { println!("{}", switchyard::VERSION); }
