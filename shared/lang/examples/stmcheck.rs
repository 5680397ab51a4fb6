//! Print how a .stm file loads: the Definition id, or the rendered error (a development aid).
fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: stmcheck FILE [NAME]");
    let name = std::env::args().nth(2);
    match harel_lang::load_file(std::path::Path::new(&path), name.as_deref()) {
        Ok(d) => println!("{}: ok", d.id),
        Err(e) => println!("{e}"),
    }
}
